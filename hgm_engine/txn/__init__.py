"""Transactions: ops, their application to an overlay, reports, history.
"""
