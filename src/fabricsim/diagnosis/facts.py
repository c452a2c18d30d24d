"""What one nccl-tests log says, with the lines that say it: the table (reports.nccltests_log), NCCL's INFO lines
(importers.nccl_log.scan), the NCCL environment the run had and its NCCL version.

The environment is the log's own `NCCL_X set by environment to V` lines, then what the caller adds (`--env`), which
wins; the NCCL version is the log's (`NCCL version 2.20.3`, nccl-tests' `nccl-library=22602`) unless one is given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fabricsim.errors import FabricsimError, option
from fabricsim.importers.machine import Machine
from fabricsim.importers.nccl_log import InfoLog, scan
from fabricsim.reports.nccltests_log import ParsedLog, bus_factor_ranks, parse_nccl_tests
from fabricsim.schedules.layout import COLLECTIVES

_INFO_PREFIX = re.compile(r"^\S+:\d+:\d+ \[\d+\] (NCCL INFO .*)$")
_VERSION = re.compile(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?\s*$")


@dataclass(frozen=True)
class Quote:
    """One line of the log as evidence: its number in the file and its text (host:pid:tid prefix dropped)."""

    line: int
    text: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.text}"


@dataclass(frozen=True)
class Facts:
    """A log read for diagnosis."""

    source: str  # the log's name, as reports print it
    text: str
    log: ParsedLog  # the nccl-tests table
    info: InfoLog  # the NCCL INFO lines (empty without NCCL_DEBUG=INFO)
    env: Mapping[str, str]  # NCCL_* the run had: the log's lines, then the given ones
    env_given: tuple[str, ...]  # the variables the caller gave (not in the log)
    version: str  # '2.20.3', '2.20' or '' when neither the log nor the caller says
    version_quote: Quote | None
    machines: tuple[Machine, ...] = ()  # accompanying dumps (NCCL topology XML, nvidia-smi topo -m, ibstat, ...)
    ranks_given: int = 0  # the caller's rank count, for a log that does not print its own
    ranks_implied: int = 0  # what the rows' busbw / algbw implies once the collective is known (with_implied_ranks)

    @property
    def nccl_version(self) -> tuple[int, int] | None:
        """(major, minor) of the NCCL the run used, where known."""
        m = _VERSION.match(self.version)
        return (int(m.group(1)), int(m.group(2))) if m else None

    @property
    def logged_ranks(self) -> int:
        """Ranks the log itself states: the table's count, else NCCL's communicator size, else 0."""
        if self.log.nranks:
            return int(self.log.nranks)
        if self.info.comms:
            return max(self.info.comms)
        return max(self.info.devices) + 1 if self.info.devices else 0

    @property
    def ranks(self) -> int:
        """Ranks of the run: the log's, else the caller's, else what its rows imply, else 0 (unknown)."""
        return self.logged_ranks or self.ranks_given or self.ranks_implied

    def quotes(self, kind: str) -> tuple[Quote, ...]:
        """The first lines of the log that state a fact of this kind (importers.nccl_log.InfoLog.lines keys)."""
        return tuple(Quote(i, short(text)) for i, text in self.info.lines.get(kind, ()))

    def env_quote(self, var: str) -> str:
        """Where the value of an NCCL variable comes from: its 'set by environment' line, or the caller."""
        if var in self.env_given:
            return f"given: {var}={self.env[var]}"
        said = self.quotes(f"env:{var}")
        return str(said[0]) if said else f"the log: {var}={self.env[var]}"


def short(line: str) -> str:
    """An INFO line without its host:pid:tid [dev] prefix ('NCCL INFO ...'); other lines as they are."""
    m = _INFO_PREFIX.match(line)
    return m.group(1) if m else line.strip()


def _check_env(env: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for var, value in env.items():
        if not re.fullmatch(r"NCCL_[A-Z0-9_]+", str(var)):
            raise FabricsimError(f"env {var!r}: give NCCL variables as NCCL_NAME=VALUE, e.g. NCCL_P2P_DISABLE=1")
        out[str(var)] = str(value)
    return out


def read_facts(text: str, source: str, *, env: Mapping[str, str] | None = None, nccl_version: str | None = None,
               machines: Sequence[Machine] = (), ranks: int | None = None) -> Facts:
    """The facts of one nccl-tests log (one run: a file of several runs is an error naming them); `ranks`: the run's
    rank count where the log does not print it (a count that contradicts the log's is an error)."""
    log = parse_nccl_tests(text)
    info = scan(text)
    given = _check_env(env or {})
    merged = {**info.env, **given}
    quote = None
    version = info.version or log.nccl_version or ""
    if info.lines.get("version"):
        i, line = info.lines["version"][0]
        quote = Quote(i, short(line))
    elif version:
        quote = next((Quote(i, line.strip()) for i, line in enumerate(text.splitlines(), 1)
                      if "nccl-library=" in line or "NCCL version" in line), None)
    if nccl_version:
        m = _VERSION.match(nccl_version)
        if not m:
            raise FabricsimError(f"{option('nccl_version', nccl_version)}: give the release as MAJOR.MINOR[.PATCH], e.g. 2.21")
        if version and not version.startswith(f"{m.group(1)}.{m.group(2)}"):
            raise FabricsimError(f"{option('nccl_version', nccl_version)} but the log says NCCL {version}: drop "
                                 f"{option('nccl_version')}")
        if not version:
            version = nccl_version.strip()
    facts = Facts(source, text, log, info, merged, tuple(sorted(given)), version, quote, tuple(machines))
    if ranks is not None:
        if ranks < 1:
            raise FabricsimError(f"{option('gpus', ranks)}: a run has at least one rank")
        if facts.logged_ranks and facts.logged_ranks != ranks:
            raise FabricsimError(f"{option('gpus', ranks)}, but the log says {facts.logged_ranks} ranks: drop "
                                 f"{option('gpus')}")
        facts = replace(facts, ranks_given=ranks)
    return facts


def with_implied_ranks(facts: Facts, collective: str) -> Facts:
    """`facts` with the rank count its rows imply for `collective` (busbw / algbw, reports.nccltests_log
    .bus_factor_ranks), for a log that names neither its collective nor its ranks and a caller who gave no count."""
    if facts.ranks:
        return facts
    return replace(facts, ranks_implied=bus_factor_ranks(facts.log.rows, collective) or 0)


def log_collective(facts: Facts, given: str | None) -> str:
    """The collective a log ran: the one it names, else `given` (--collective); one error when they disagree,
    neither says, or fabricsim does not predict it."""
    coll = facts.log.collective or given
    if facts.log.collective and given and given != facts.log.collective:
        raise FabricsimError(f"the log ran {facts.log.collective} but {option('collective')} says {given}: drop "
                             f"{option('collective')}")
    if not coll:
        raise FabricsimError("the log does not name its collective (no '<name>_perf' or 'Collective test' line): "
                             f"pass {option('collective')} ({', '.join(COLLECTIVES)})")
    if coll not in COLLECTIVES:
        raise FabricsimError(f"collective {coll!r} is not one fabricsim predicts ({', '.join(COLLECTIVES)})")
    return coll
