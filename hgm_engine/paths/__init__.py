"""Paths: trajectories stored as versioned paths, their localization and their rewrite.
"""
