"""Why a job failed, in the contract's terms: bad input (exit 2: the same command fails again) or a failure a retry
may cure (exit 1), and the one line that says so.

``classify(error)`` decides, from what the error and the errors it was raised from say about themselves:

1. The engine's own errors decide first: ``UserInputError`` (and ``UnsupportedFeatureError`` and
   ``AggregateOverflowError``: a retry runs into them again) is bad input; every other ``EngineError`` (an
   unreachable catalog or store, a commit whose outcome is unknown) is retryable. An engine error raised on an
   executor reaches the driver as the last line of the worker's Python traceback inside Spark's exception: its class
   name decides the same way.
2. Errors the job did not raise itself are judged by their kind, never by their wording:
   - Spark's error classes (``[NUMERIC_VALUE_OUT_OF_RANGE]``, ``[CAST_INVALID_INPUT]``...) by their SQLSTATE: the
     exception's own ``getSqlState()``, the ``SQLSTATE: 22003`` Spark 4 appends, or, for a class named only in text
     (Spark 3.5), the state the installed Spark's error-class file gives it (``error/error-conditions.json``, or
     ``error-classes.json`` on 3.5, in ``spark-common-utils``). ``BAD_INPUT_SQLSTATE_CLASSES`` are data, syntax,
     constraint, limit and unsupported-feature errors; the others (resources, I/O, connections, internal errors)
     may pass;
   - Arrow's exception types: ``ArrowInvalid``, ``ArrowTypeError``, ``ArrowNotImplementedError``... describe the
     data; ``ArrowMemoryError`` and ``ArrowCancelled`` do not;
   - an ``OSError`` by its errno: a name too long, a path that is not a directory, permission denied are bad input;
     a full disk, a timeout, a reset connection may pass;
   - Java exceptions of the network, of memory and of a full disk, named in the error's text, may pass.
3. A failure that may pass anywhere in the chain wins over bad input (a source file Spark could not read because
   the connection dropped is retried); with neither, the job's failure is retryable, as before.

The line of bad input names what the job was working on (``subject``: the table, the source) unless the reason
names it already, then the innermost reason Spark, Arrow or the OS gave, with the file, and the row, column or SQL
position where Spark tells them.
"""

from __future__ import annotations

import argparse
import errno
import functools
import importlib.util
import json
import logging
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from spark_jobs.engine.shared.errors import EngineError, UnsupportedFeatureError, UserInputError
from spark_jobs.job_contract import EXIT_FAILURE, EXIT_USAGE

log = logging.getLogger(__name__)
MAX_REASON = 280
# SQLSTATE classes (first two characters) whose errors the same input raises again: data exceptions (22), constraint
# and cardinality violations (23, 21), syntax and access rules (42), unsupported features (0A), program limits (54),
# invalid names and configuration (07, 3F, 46, F0), data source errors (KD), errors raised by the query (P0).
BAD_INPUT_SQLSTATE_CLASSES = frozenset({"07", "0A", "21", "22", "23", "2B", "3F", "42", "46", "54", "F0", "KD", "P0"})
# States whose class says nothing by itself: a user function failed (38, 39); what it raised decides.
_WRAPPER_SQLSTATE_CLASSES = frozenset({"38", "39"})
# Arrow's exception types that describe the data, and those that describe the process.
ARROW_BAD_INPUT = frozenset(
    {
        "ArrowInvalid",
        "ArrowTypeError",
        "ArrowNotImplementedError",
        "ArrowKeyError",
        "ArrowIndexError",
        "ArrowCapacityError",
        "ArrowSerializationError",
    }
)
ARROW_RETRYABLE = frozenset({"ArrowMemoryError", "ArrowCancelled"})
BAD_INPUT_ERRNOS = frozenset(
    {errno.ENAMETOOLONG, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS, errno.ELOOP}
)
RETRYABLE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EIO,
        errno.ENOMEM,
        errno.EAGAIN,
        errno.EBUSY,
        errno.EINTR,
        errno.ETIMEDOUT,
        errno.ECONNRESET,
        errno.ECONNREFUSED,
        errno.ECONNABORTED,
        errno.EHOSTUNREACH,
        errno.ENETUNREACH,
        errno.ENETDOWN,
        errno.EPIPE,
        errno.ESTALE,
        errno.EMFILE,
        errno.ENFILE,
    }
)
# Java exceptions (simple names) and phrases of the JVM that mean the machine, the network or a service failed.
JAVA_RETRYABLE = frozenset(
    {
        "SocketTimeoutException",
        "ConnectException",
        "SocketException",
        "NoRouteToHostException",
        "UnknownHostException",
        "ClosedChannelException",
        "TimeoutException",
        "OutOfMemoryError",
        "FetchFailedException",
        "SdkClientException",
        "AmazonClientException",
    }
)
_RETRYABLE_PHRASES = ("No space left on device", "Disk quota exceeded", "ExecutorLostFailure", "Connection reset")
# Python exceptions (by name, also as text inside a Spark error) that a retry may cure.
PYTHON_RETRYABLE = frozenset(
    {"OperationalError", "InterfaceError", "DisconnectionError", "Py4JNetworkError", "MemoryError", "TimeoutError"}
)

_ERROR_CLASS = re.compile(r"\[(?P<name>[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]")
_SQLSTATE = re.compile(r"SQLSTATE: (?P<state>[0-9A-Z]{5})")
_ERRNO = re.compile(r"\[Errno (?P<number>\d+)\]")
_FRAME = re.compile(r"^\s+(?:at |\.\.\. \d+ more|File \")")
_EXCEPTION_NAME = re.compile(
    r"(?<![\w.$])(?:[A-Za-z_$][\w$]*\.)*(?P<name>[A-Z][\w$]*(?:Exception|Error|Invalid|Failure))\b"
)
_PYTHON_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(?P<name>[A-Z]\w*(?:Error|Invalid)): (?P<message>.+)$", re.MULTILINE)
_FAILED_READ_FILE = re.compile(r"\[FAILED_READ_FILE[.\w]*\][^\n]*?reading file (?P<path>\S+?)\.?(?:\s|$)")
_SQL_CONTEXT = re.compile(r"== SQL ?\(line (?P<line>\d+), position (?P<position>\d+)\) ==")
_CAUSED_BY = re.compile(r"^\s*Caused by: (?:[\w.$]+): (.+)$", re.MULTILINE)
_FIRST_SENTENCE = re.compile(r"^(?P<sentence>.*?[^.\s]\.)(?=\s|$)")


@dataclass(frozen=True)
class Verdict:
    """How a job ends: its exit code and the reason on its ``error:`` line."""

    exit_code: int
    reason: str

    @property
    def bad_input(self) -> bool:
        """Whether the same command would fail again (exit code 2)."""
        return self.exit_code == EXIT_USAGE


@dataclass(frozen=True)
class TypedArgument:
    """An option as the user typed it on the command line: ``--older-than``, its destination, its value."""

    flag: str
    dest: str
    value: str | None


@dataclass
class _Subject:
    """What the running job works on, for lines that do not say it themselves, and the options it was given."""

    table: str | None = None
    source: str | None = None
    typed: tuple[TypedArgument, ...] = ()


_SUBJECT = _Subject()
# Options that name what a job works on: an error names them by an explicit ``argument``, never by their value alone
# (a table's name appears in most messages of the job).
_SUBJECT_DESTS = frozenset({"catalog", "table", "source"})
# Bad input about a file of the table (which table) or the source's rows (which table and source), whatever names
# the message gives itself.
_ABOUT_THE_TABLE_OR_SOURCE = frozenset({"CorruptFileError", "RequiredColumnNullsError"})


def set_subject(*, table: str | None = None, source: str | None = None) -> None:
    """Record what the job works on (its ``--table``, its ``--source``), named by lines of bad input."""
    _SUBJECT.table, _SUBJECT.source = table, source


def set_typed_arguments(typed: list[TypedArgument]) -> None:
    """Record the options the user typed, so that an error about one of them names it as typed."""
    _SUBJECT.typed = tuple(typed)


def typed_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> list[TypedArgument]:
    """The options of ``argv`` as typed (``--x v`` or ``--x=v``), with the destinations ``parser`` gives them."""
    options: dict[str, tuple[str, bool]] = {}
    pending = [parser]
    while pending:
        current = pending.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending.extend(action.choices.values())
            for option in action.option_strings:
                options.setdefault(option, (action.dest, action.nargs != 0))
    typed: list[TypedArgument] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if not token.startswith("--") or token == "--":
            continue
        flag, equals, inline = token.partition("=")
        known = options.get(flag) or _abbreviated(options, flag)
        if known is None:
            continue
        dest, takes_value = known
        value: str | None = None
        if equals:
            value = inline
        elif takes_value and index < len(argv):
            value = argv[index]
            index += 1
        typed.append(TypedArgument(flag, dest, value))
    return typed


def _abbreviated(options: dict[str, tuple[str, bool]], flag: str) -> tuple[str, bool] | None:
    """The option ``flag`` abbreviates (argparse accepts a unique prefix), or None."""
    matches = [known for option, known in options.items() if option.startswith(flag)]
    return matches[0] if len({dest for dest, _ in matches}) == 1 else None


def clear_subject() -> None:
    """Forget the subject and the typed options (a new job starts)."""
    set_subject()
    _SUBJECT.typed = ()


def classify(error: BaseException, job: str) -> Verdict:
    """The exit code and ``error:`` reason for ``error``, which ended job ``job`` (module doc)."""
    chain = list(_chain(error))
    own = _own_verdict(chain, job)
    if own is not None:
        return own
    texts = [str(item) for item in chain]
    if _may_pass(chain, texts):
        return Verdict(EXIT_FAILURE, _shortened(f"{job} job failed: {_describe(error)}"))
    reason = _bad_input_reason(chain, texts)
    if reason is not None:
        return Verdict(EXIT_USAGE, _shortened(_with_subject(reason)))
    return Verdict(EXIT_FAILURE, _shortened(f"{job} job failed: {_describe(error)}"))


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the errors it was raised from or during, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def exception_texts(error: BaseException) -> list[str]:
    """The text of ``error`` and of the exceptions it was raised from, outermost first."""
    return [str(item) for item in _chain(error)]


def _own_verdict(chain: list[BaseException], job: str) -> Verdict | None:
    """The verdict of an engine error in the chain, raised here or (as text) on an executor (module doc, step 1)."""
    for item in chain:
        if _is_bad_input_class(type(item)):
            reason = _one_line(str(item)) or type(item).__name__
            if type(item).__name__ in _ABOUT_THE_TABLE_OR_SOURCE:  # a damaged file, the source's rows: say which
                reason = _with_subject(reason, source=type(item).__name__ != "CorruptFileError")
            return Verdict(EXIT_USAGE, _shortened(naming_the_argument(reason, item)))
        if isinstance(item, EngineError):
            return Verdict(EXIT_FAILURE, _shortened(f"{job} job failed: {_describe(item)}"))
    bad, other = _engine_error_names()
    for item in chain:
        lines = [m for m in _PYTHON_ERROR_LINE.finditer(str(item)) if m["name"] in bad | other]
        if lines:
            last = lines[-1]
            message = _one_line(last["message"])
            if last["name"] in bad:
                if last["name"] in _ABOUT_THE_TABLE_OR_SOURCE:  # a damaged file, the source's rows: say which
                    message = _with_subject(message, source=last["name"] != "CorruptFileError")
                return Verdict(EXIT_USAGE, _shortened(message))
            return Verdict(EXIT_FAILURE, _shortened(f"{job} job failed: {last['name']}: {message}"))
    if "pyiceberg" in sys.modules:  # a metadata file, manifest list or manifest pyiceberg could not decode
        from spark_jobs.engine.shared.damaged_metadata import damaged_file_reason

        damaged = damaged_file_reason(_SUBJECT.table or "(unknown)", chain[0])
        if damaged is not None:
            return Verdict(EXIT_USAGE, _shortened(damaged))
    from spark_jobs.engine.shared.storage import storage_failure  # pyarrow: kept off the way to Spark's start

    for item in chain:
        storage = storage_failure(str(item))
        if storage is not None:  # e.g. wrong keys seen first by an executor: one line naming the object
            if isinstance(storage, UserInputError):
                return Verdict(EXIT_USAGE, _shortened(f"{job} job failed: {_describe(storage)}"))
            return Verdict(EXIT_FAILURE, _shortened(f"{job} job failed: {_describe(storage)}"))
    return None


def naming_the_argument(reason: str, error: BaseException) -> str:
    """``reason`` led by the option the user typed that it is about, when it does not name one itself.

    The option is the one ``error.argument`` names (by its destination, e.g. ``table`` for ``--table``), else the one
    whose name (``retain-last``, ``as_of``) or typed value (``'notatime'``) the reason mentions, first mention first;
    options naming the job's subject (``--catalog``, ``--table``, ``--source``) only by ``argument``. Errors about
    files and rows (a damaged file, nulls in a required column) are not about an option.
    """
    typed = _SUBJECT.typed
    if not typed or any(item.flag in reason for item in typed) or _is_about_data(error):
        return reason
    argument = getattr(error, "argument", None)
    chosen = next((item for item in typed if argument is not None and item.dest == argument), None)
    if chosen is None:
        mentions = [
            (rank, item)
            for item in typed
            if item.dest not in _SUBJECT_DESTS
            for rank in [_mention(reason, item)]
            if rank is not None
        ]
        chosen = min(mentions, key=lambda pair: pair[0])[1] if mentions else None
    if chosen is None:
        return reason
    shown = "" if chosen.value is None else f" {_quoted(_cut(chosen.value, 60))}"
    return f"{chosen.flag}{shown}: {reason}"


def _is_about_data(error: BaseException) -> bool:
    """Whether ``error`` is about a file or the rows (not an option): a damaged file, nulls, a storage refusal."""
    return type(error).__name__ in {"CorruptFileError", "RequiredColumnNullsError", "StorageAccessError"}


def _mention(reason: str, item: TypedArgument) -> tuple[int, int] | None:
    """Where ``reason`` first mentions the option, ranked: its name or its whole typed value first (0), else a
    quoted word of its value (1: ``'nosuch'`` of ``--columns id,nosuch``); None when it does not."""
    lowered = reason.lower()
    name = item.flag.lstrip("-").lower()
    spellings = {name, name.replace("-", "_"), name.replace("-", " "), item.dest.lower(), item.dest.replace("_", " ")}
    positions = [
        m.start()
        for spelling in spellings
        for m in re.finditer(rf"(?<![\w-]){re.escape(spelling)}s?(?![\w-])", lowered)
    ]
    value = item.value
    if value is not None:
        quoted = [f"'{value}'", f'"{value}"', repr(value)]
        positions += [index for text in quoted for index in [reason.find(text)] if index >= 0]
        if len(value.strip()) >= 2:
            positions += [m.start() for m in re.finditer(rf"(?<![\w.-]){re.escape(value)}(?![\w-])", reason)]
    if positions:
        return 0, min(positions)
    words = {word for word in re.findall(r"\w+", value or "") if len(word) >= 2 and word != value}
    quoted_words = [index for word in words for index in [reason.find(f"'{word}'")] if index >= 0]
    return (1, min(quoted_words)) if quoted_words else None


def _quoted(value: str) -> str:
    """A typed value as the reason shows it: bare when it is a plain word, else quoted."""
    return value if value and re.fullmatch(r"[\w.:/@+-]+", value) else repr(value)


def _is_bad_input_class(cls: type) -> bool:
    """Whether an engine error class is bad input: ``UserInputError``, or what no retry gets past."""
    return issubclass(cls, UserInputError | UnsupportedFeatureError) or cls.__name__ == "AggregateOverflowError"


def _engine_error_names() -> tuple[frozenset[str], frozenset[str]]:
    """Names of the engine's bad-input error classes and of its other error classes (those loaded so far)."""
    bad: set[str] = set()
    other: set[str] = set()
    pending: list[type] = [EngineError]
    while pending:
        cls = pending.pop()
        (bad if _is_bad_input_class(cls) else other).add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return frozenset(bad), frozenset(other - bad)


def _may_pass(chain: list[BaseException], texts: list[str]) -> bool:
    """Whether anything in the chain says the failure may pass (module doc, steps 2-3)."""
    for item in chain:
        name = type(item).__name__
        if name in ARROW_RETRYABLE or name in PYTHON_RETRYABLE or isinstance(item, ConnectionError | TimeoutError):
            return True
        if isinstance(item, OSError) and item.errno in RETRYABLE_ERRNOS:
            return True
        state = _sqlstate_of_exception(item)
        if state is not None and _retryable_state(state):
            return True
    for text in texts:
        for line in _header_lines(text):
            if any(phrase in line for phrase in _RETRYABLE_PHRASES):
                return True
            names = {m["name"] for m in _EXCEPTION_NAME.finditer(line)}
            if names & (JAVA_RETRYABLE | ARROW_RETRYABLE | PYTHON_RETRYABLE):
                return True
            if any(int(m["number"]) in RETRYABLE_ERRNOS for m in _ERRNO.finditer(line)):
                return True
        for state in _sqlstates_in(text):
            if _retryable_state(state):
                return True
    return False


def _retryable_state(state: str) -> bool:
    return state[:2] not in BAD_INPUT_SQLSTATE_CLASSES | _WRAPPER_SQLSTATE_CLASSES


def _bad_input_reason(chain: list[BaseException], texts: list[str]) -> str | None:
    """The reason of bad input the chain gives (module doc, step 2), or None when nothing in it is bad input."""
    for item in chain:
        if isinstance(item, OSError) and item.errno in BAD_INPUT_ERRNOS:
            what = item.strerror or errno.errorcode.get(item.errno or 0, "") or _one_line(str(item))
            return f"{what}: {_abridged(str(item.filename))}" if item.filename else _one_line(str(item))
        if type(item).__name__ in ARROW_BAD_INPUT:
            return f"{type(item).__name__}: {_one_line(str(item))}"
        state = _sqlstate_of_exception(item)
        if state is not None and state[:2] in BAD_INPUT_SQLSTATE_CLASSES:
            return _spark_reason(str(item), texts)
    for text in texts:
        if any(state[:2] in BAD_INPUT_SQLSTATE_CLASSES for state in _sqlstates_in(text)):
            return _spark_reason(text, texts)
        for line in _header_lines(text):
            arrow = next((m for m in _PYTHON_ERROR_LINE.finditer(line) if m["name"] in ARROW_BAD_INPUT), None)
            if arrow is not None:
                return f"{arrow['name']}: {_one_line(arrow['message'])}"
            if any(int(m["number"]) in BAD_INPUT_ERRNOS for m in _ERRNO.finditer(line)):
                return _one_line(line)
    return None


def _spark_reason(text: str, texts: list[str]) -> str:
    """One line from Spark's failure: the file it names, the innermost classified message, the SQL position."""
    classified = [m for m in _classified_messages("\n".join(texts))]
    message = classified[-1] if classified else _one_line(text.splitlines()[0] if text else "")
    failed_read = next((m for t in texts for m in [_FAILED_READ_FILE.search(t)] if m), None)
    where = f"source file {failed_read['path']}: " if failed_read else ""
    position = next((where for t in texts for where in [_query_position(t)] if where), "")
    if failed_read and "FAILED_READ_FILE" in message:  # the wrapper only: say what its cause says
        causes = _CAUSED_BY.findall("\n".join(texts))
        message = _one_line(causes[-1]) if causes else message
    return f"{where}{message}{position}"


def _query_position(text: str) -> str | None:
    """Where in the query Spark's error points (``== SQL (line 1, position 31) ==``, then the query's line and a line
    of ``^`` under the expression), as `` (query line 1, position 31: cast(d as decimal(5,2)))``; None without it."""
    match = _SQL_CONTEXT.search(text)
    if match is None:
        return None
    lines = text[match.end() :].lstrip("\n").splitlines()
    fragment = ""
    if len(lines) >= 2 and "^" in lines[1]:
        start = lines[1].index("^")
        fragment = lines[0][start : len(lines[1].rstrip())].strip()
    shown = f": {fragment[:60]}" if fragment else ""
    return f" (query line {match['line']}, position {match['position']}{shown})"


def _classified_messages(text: str) -> Iterator[str]:
    """Spark's messages in ``text`` that carry an error class, outermost first, each shortened to its statement."""
    for line in _header_lines(text):
        match = _ERROR_LINE_WITH_CLASS.search(line)
        if match is None or not _known_error_class(match["name"]):
            continue
        body = _one_line(_SQLSTATE.sub("", match["body"]))
        sentence = _FIRST_SENTENCE.match(body)  # the statement; Spark's advice (settings, try_cast) follows it
        yield f"[{match['name']}] {sentence['sentence'] if sentence else body}"


_ERROR_LINE_WITH_CLASS = re.compile(r"\[(?P<name>[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]\s*(?P<body>.*)$")


def _header_lines(text: str) -> list[str]:
    """The lines of ``text`` that are not stack frames (Java ``at ...``, Python ``File "..."``)."""
    return [line for line in text.splitlines() if line.strip() and not _FRAME.match(line)]


def _sqlstates_in(text: str) -> list[str]:
    """SQLSTATEs ``text`` states, and those of the Spark error classes it names (Spark 3.5 omits them)."""
    states = [m["state"] for m in _SQLSTATE.finditer(text)]
    for line in _header_lines(text):
        for match in _ERROR_CLASS.finditer(line):
            state = spark_error_states().get(match["name"].split(".")[0])
            if state:
                states.append(state)
    return states


def _known_error_class(name: str) -> bool:
    states = spark_error_states()
    return not states or name.split(".", maxsplit=1)[0] in states


def _sqlstate_of_exception(error: BaseException) -> str | None:
    """The SQLSTATE a PySpark exception carries (``getSqlState``), or None."""
    getter = getattr(error, "getSqlState", None)
    if getter is None:
        return None
    try:
        state = getter()
    except Exception:  # the JVM may be gone; the text still holds the class
        return None
    return str(state) if state else None


@functools.cache
def spark_error_states() -> dict[str, str]:
    """Spark's error classes and their SQLSTATE, from the installed Spark's error-class file ({} without Spark)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return {}
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    states: dict[str, str] = {}
    for jar in sorted(jars.glob("spark-common-utils_*.jar")):
        try:
            with zipfile.ZipFile(jar) as archive:
                present = set(archive.namelist())
                names = [n for n in ("error/error-conditions.json", "error/error-classes.json") if n in present]
                for name in names[:1]:
                    for error_class, spec_of in json.loads(archive.read(name)).items():
                        if isinstance(spec_of, dict) and spec_of.get("sqlState"):
                            states[error_class] = str(spec_of["sqlState"])
                        else:
                            states.setdefault(error_class, "")
        except (OSError, zipfile.BadZipFile, ValueError) as error:
            log.debug("cannot read Spark's error classes from %s: %s", jar, error)
    return states


def _with_subject(reason: str, *, source: bool = True) -> str:
    """``reason`` led by the job's table (and source) unless it names them."""
    parts = []
    if _SUBJECT.table and _SUBJECT.table not in reason:
        parts.append(f"table {_abridged(_SUBJECT.table)}")
    if source and _SUBJECT.source and _SUBJECT.source not in reason and "source file" not in reason:
        parts.append(f"source {_abridged(_SUBJECT.source)}")
    return f"{', '.join(parts)}: {reason}" if parts else reason


def _describe(error: BaseException) -> str:
    text = _one_line(str(error))
    if isinstance(error, EngineError):
        return text or type(error).__name__
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _abridged(name: str, keep: int = 80) -> str:
    """``name`` (a path, a table) on one line, cut in its middle when longer than ``keep`` characters."""
    return _cut(_one_line(name), keep)


def _cut(text: str, keep: int) -> str:
    """``text`` cut in its middle when longer than ``keep`` characters, so the reason still fits."""
    return text if len(text) <= keep else f"{text[: keep // 2 - 2]}...{text[-(keep // 2 - 1) :]}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shortened(reason: str) -> str:
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 3] + "..."
