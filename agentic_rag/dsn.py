"""PostgreSQL connection strings: both forms libpq reads, and the URL form asyncpg takes.

A DSN is a URL (``postgresql://user:secret@host:5432/db?sslmode=require``) or libpq's keyword form
(``host=h port=5432 dbname=db user=u``, values in single quotes when they hold spaces). asyncpg reads
URLs only, so a keyword DSN is turned into the same connection as a URL; parameters asyncpg does not
know travel in the query string, where it passes them to the server as settings (``options`` too), except
libpq's ``connect_timeout``, which becomes asyncpg's ``timeout`` (:func:`asyncpg_args`).
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote, urlencode

__all__ = ["asyncpg_args", "conninfo", "to_url", "with_database"]

_SCHEMES = ("postgresql://", "postgres://")
CONNECT_TIMEOUT_S = 60.0  # asyncpg's own default
_KEYWORD = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*")


def _keywords(dsn: str) -> dict[str, str]:
    """libpq's ``key=value`` form: values unquoted (backslash escapes) or single-quoted."""
    out: dict[str, str] = {}
    i = 0
    while i < len(dsn):
        if dsn[i].isspace():
            i += 1
            continue
        m = _KEYWORD.match(dsn, i)
        if m is None:
            word = dsn[i:].split(None, 1)[0]
            raise ValueError(f'missing "=" after "{word}" in connection info string')
        key, i = m.group(1), m.end()
        value: list[str] = []
        quoted = i < len(dsn) and dsn[i] == "'"
        i += quoted
        while i < len(dsn) and (quoted or not dsn[i].isspace()):
            c = dsn[i]
            if c == "\\" and i + 1 < len(dsn):
                value.append(dsn[i + 1])
                i += 2
                continue
            if quoted and c == "'":
                quoted = False
                i += 1
                break
            value.append(c)
            i += 1
        if quoted:
            raise ValueError("unterminated quoted string in connection info string")
        out[key] = "".join(value)
    return out


def _url(dsn: str) -> dict[str, str]:
    rest = dsn.split("://", 1)[1]
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    out: dict[str, str] = {}
    if "@" in netloc:
        userinfo, netloc = netloc.rsplit("@", 1)
        user, sep, password = userinfo.partition(":")
        if user:
            out["user"] = unquote(user)
        if sep:
            out["password"] = unquote(password)
    hosts, ports = [], []
    for part in filter(None, netloc.split(",")):
        if part.startswith("["):  # [ipv6]:port
            host, _, tail = part[1:].partition("]")
            port = tail[1:] if tail.startswith(":") else ""
        else:
            host, _, port = part.partition(":")
        hosts.append(unquote(host))
        ports.append(port)
    if any(hosts):
        out["host"] = ",".join(hosts)
    if any(ports):
        out["port"] = ",".join(ports)
    if path:
        out["dbname"] = unquote(path)
    for key, value in parse_qsl(query, keep_blank_values=True):
        out["dbname" if key == "database" else key] = value
    return out


def conninfo(dsn: str) -> dict[str, str]:
    """The parameters of a DSN in either form (``host``, ``port``, ``dbname``, ``user``, ...).

    Raises ``ValueError`` for what libpq would not read as a DSN."""
    if dsn.startswith(_SCHEMES):
        return _url(dsn)
    if "://" in dsn:
        raise ValueError(f"unknown URI scheme {dsn.split('://', 1)[0]!r}")
    return _keywords(dsn)


def _from(info: dict[str, str]) -> str:
    info = dict(info)
    host, port = info.pop("host", ""), info.pop("port", "")
    query: dict[str, str] = {}
    if "/" in host or "," in host or "," in port:  # a socket directory or several hosts: asyncpg reads them here
        query["host"], host = host, ""
        if port:
            query["port"], port = port, ""
    netloc = f"[{host}]" if ":" in host else quote(host, safe="")
    if port:
        netloc += f":{port}"
    user, password = info.pop("user", None), info.pop("password", None)
    if user is not None or password is not None:
        auth = quote(user or "", safe="") + (f":{quote(password, safe='')}" if password is not None else "")
        netloc = f"{auth}@{netloc}"
    path = quote(info.pop("dbname", ""), safe="")
    query.update(info)
    return f"postgresql://{netloc}/{path}" + (f"?{urlencode(query)}" if query else "")


def to_url(dsn: str) -> str:
    """The DSN as a URL (unchanged when it is one already): the form asyncpg connects with."""
    return dsn if dsn.startswith(_SCHEMES) else _from(conninfo(dsn))


def asyncpg_args(dsn: str) -> tuple[str, float]:
    """What asyncpg connects with: the DSN as a URL, and the seconds a connection attempt may take (libpq's
    ``connect_timeout``, a client setting the server would refuse; else asyncpg's default, 60)."""
    info = conninfo(dsn)
    timeout = float(info.pop("connect_timeout", "0") or 0)
    return _from(info), timeout if timeout > 0 else CONNECT_TIMEOUT_S


def with_database(dsn: str, database: str) -> str:
    """The same server and credentials, another database (as a URL)."""
    return _from({**conninfo(dsn), "dbname": database})
