"""The token file of --token-file and what each token may do (hgm_engine/server/tokens.py)."""

from __future__ import annotations

import hashlib

import pytest

from hgm_engine.errors import ServiceError
from hgm_engine.server import tokens
from hgm_engine.server.service import http_status
from hgm_engine.server.tokens import OPEN_ACCESS, Grant, Scope, TokenScopes, bearer_token, token_digest

READER = "reader-token-0123456789"
WRITER = "writer-token-0123456789"
AUDIT = "audit-token-0123456789ab"


def refused(text: str, **kwargs) -> ServiceError:
    with pytest.raises(ServiceError) as caught:
        TokenScopes.parse(text, source="tokens.txt", **kwargs)
    assert all(p.category == "invalid-token-file" for p in caught.value.problems)
    return caught.value


# -- the format -----------------------------------------------------------------------------


def test_a_line_gives_a_token_its_prefix_and_mode():
    grant = TokenScopes.parse(f"{WRITER} acme write").grant(WRITER)
    assert grant.scopes == (Scope("acme", write=True),)


def test_the_mode_is_read_when_omitted():
    grant = TokenScopes.parse(f"{READER} acme").grant(READER)
    assert grant.can_read("acme/alice") and not grant.can_write("acme/alice")


def test_blank_lines_comment_lines_and_trailing_comments_are_ignored():
    scopes = TokenScopes.parse(f"# tokens\n\n   \n{READER} acme read  # the dashboard\r\n")
    assert len(scopes) == 1 and scopes.grant(READER).can_read("acme")


def test_a_token_written_as_its_sha256_is_the_token():
    scopes = TokenScopes.parse(f"sha256:{hashlib.sha256(WRITER.encode()).hexdigest().upper()} * write")
    assert scopes.grant(WRITER).can_write("anything")
    assert token_digest(WRITER) == "sha256:" + hashlib.sha256(WRITER.encode()).hexdigest()


def test_a_sha256_line_that_is_not_64_hex_digits_is_refused():
    err = refused("sha256:abc123 acme")
    assert err.problems[0].where == "tokens.txt:1" and "64 hexadecimal digits" in err.message


def test_a_short_token_is_refused_naming_the_minimum():
    err = refused("\n\nshort acme")
    assert err.problems[0].where == "tokens.txt:3" and "at least 16" in err.message


def test_the_minimum_length_is_configurable():
    assert TokenScopes.parse("short acme", min_length=4).grant("short").can_read("acme")


def test_a_token_with_a_non_ascii_character_is_refused():
    assert "'é'" in refused("tokén-0123456789abcdef acme").message


def test_a_line_without_a_prefix_is_refused():
    assert "prefix is missing" in refused(READER).message


def test_a_line_with_more_than_three_fields_is_refused():
    assert "not 4 fields" in refused(f"{READER} acme read extra").message


def test_an_unknown_mode_is_refused():
    assert "not 'rw'" in refused(f"{READER} acme rw").message


def test_a_prefix_that_is_no_memory_name_is_refused():
    assert "not '*' or a memory name" in refused(f"{READER} acme//x").message
    assert "not '*' or a memory name" in refused(f"{READER} acme*").message


def test_every_problem_of_the_file_is_reported_with_its_line():
    err = refused(f"{READER} acme rw\n# fine\nshort acme\n{WRITER}")
    assert [p.where for p in err.problems] == ["tokens.txt:1", "tokens.txt:3", "tokens.txt:4"]
    assert "tokens.txt:3" in str(err)


def test_the_same_token_and_prefix_twice_is_refused():
    err = refused(f"{READER} acme read\n{token_digest(READER)} acme/ write")
    assert err.problems[0].where == "tokens.txt:2" and "line 1" in err.message


def test_a_token_on_several_lines_reaches_the_union():
    grant = TokenScopes.parse(f"{WRITER} acme read\n{WRITER} shared write").grant(WRITER)
    assert grant.can_read("acme/a") and grant.can_write("shared/x") and not grant.can_write("acme/a")


def test_a_file_without_tokens_is_refused():
    assert "holds no token" in refused("# nothing yet\n").message


def test_loading_a_missing_file_names_it(tmp_path):
    with pytest.raises(ServiceError) as caught:
        TokenScopes.load(tmp_path / "none.txt")
    assert caught.value.category == "invalid-token-file" and "none.txt" in caught.value.message


def test_loading_a_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "tokens.txt"
    path.write_bytes(f"{READER} acme\n".encode() + b"\xff\xfe acme\n")
    with pytest.raises(ServiceError) as caught:
        TokenScopes.load(path)
    assert caught.value.problems[0].where == f"{path}:2"


def test_loading_a_file_reads_its_tokens(tmp_path):
    path = tmp_path / "tokens.txt"
    path.write_text(f"{READER} acme\n", encoding="utf-8")
    assert TokenScopes.load(path).grant(READER).where == f"{path}:1"


# -- prefixes cover whole segments -----------------------------------------------------------


@pytest.mark.parametrize("prefix", ["acme", "acme/"])
def test_a_prefix_covers_the_memory_of_that_name_and_every_memory_under_it(prefix):
    grant = TokenScopes.parse(f"{READER} {prefix}").grant(READER)
    assert grant.can_read("acme") and grant.can_read("acme/alice") and grant.can_read("acme/alice/trip-42")


@pytest.mark.parametrize("prefix", ["acme", "acme/"])
def test_a_prefix_does_not_cover_a_name_that_only_starts_with_its_letters(prefix):
    grant = TokenScopes.parse(f"{READER} {prefix}").grant(READER)
    assert not grant.can_read("acmex") and not grant.can_read("acme-old/a") and not grant.can_read("ac")


def test_a_star_covers_every_memory():
    grant = TokenScopes.parse(f"{AUDIT} * read").grant(AUDIT)
    assert grant.can_read("default") and grant.can_read("x/y/z") and not grant.can_write("default")


def test_the_default_memory_is_reached_only_by_its_name_or_a_star():
    scopes = TokenScopes.parse(f"{READER} acme\n{WRITER} default write")
    assert not scopes.grant(READER).can_read("default") and scopes.grant(WRITER).can_write("default")


# -- at a request ----------------------------------------------------------------------------


def test_no_token_is_unauthorized_401():
    with pytest.raises(ServiceError) as caught:
        TokenScopes.parse(f"{READER} acme").grant(None)
    assert caught.value.category == "unauthorized" and http_status("unauthorized") == 401
    assert "Authorization: Bearer" in caught.value.message


def test_an_unknown_token_is_unauthorized_and_not_echoed():
    with pytest.raises(ServiceError) as caught:
        TokenScopes.parse(f"{READER} acme").grant(READER + "x")
    assert caught.value.category == "unauthorized" and READER not in str(caught.value)


def test_a_token_outside_its_prefix_is_forbidden_403():
    with pytest.raises(ServiceError) as caught:
        TokenScopes.parse(f"{WRITER} acme write").grant(WRITER).check("other/x")
    assert caught.value.category == "forbidden" and http_status("forbidden") == 403
    assert caught.value.problems[0].where == "other/x" and "acme/" in caught.value.message


def test_a_read_token_may_not_write_forbidden():
    grant = TokenScopes.parse(f"{READER} acme").grant(READER)
    assert grant.check("acme/a") == "acme/a"
    with pytest.raises(ServiceError) as caught:
        grant.check("acme/a", write=True)
    assert caught.value.category == "forbidden" and "write token" in caught.value.message


def test_a_listing_shows_only_the_covered_names_in_order():
    grant = TokenScopes.parse(f"{READER} acme\n{READER} team/x").grant(READER)
    assert grant.visible(["acme", "acme/b", "acmex", "default", "team/x/y", "team/xy"]) == ["acme", "acme/b", "team/x/y"]


def test_every_token_is_compared_whichever_matches(monkeypatch):
    # Constant time: the SHA-256 of what the client sent is compared with every token's
    # digest by hmac.compare_digest, with no early exit, the first line's token included.
    calls = []
    real = tokens.hmac.compare_digest

    def counting(a, b):
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", counting)
    scopes = TokenScopes.parse("\n".join(f"token-number-{i:04d}-abcdef acme" for i in range(5)))
    scopes.grant("token-number-0000-abcdef")
    assert calls == [(32, 32)] * 5
    calls.clear()
    with pytest.raises(ServiceError):
        scopes.grant("x")  # a short guess is hashed first: the lengths compared are always 32
    assert calls == [(32, 32)] * 5


def test_the_bearer_header_is_read_in_any_case_of_the_scheme():
    assert bearer_token("BEARER abc") == "abc" and bearer_token("Token abc") is None and bearer_token("Bearer ") is None
    assert TokenScopes.single("s3cret").grant_for_header("bearer s3cret").everything


def test_without_a_token_file_every_memory_is_open():
    assert OPEN_ACCESS.can_write("anything/at/all") and OPEN_ACCESS.visible(["a", "b"]) == ["a", "b"]


def test_a_grant_describes_its_scopes_without_the_token():
    grant = TokenScopes.parse(f"{WRITER} acme\n{WRITER} acme/alice write", source="t.txt").grant(WRITER)
    assert grant.describe() == "it reads acme/, writes acme/alice/" and grant.where == "t.txt:1"
    assert Grant(()).describe() == "it reaches no memory"
