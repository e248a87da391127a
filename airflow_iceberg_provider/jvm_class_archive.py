"""Class-data sharing for a job's driver JVM: an archive of the classes Spark loads, mapped instead of loaded again.

A job's driver JVM spends seconds loading and verifying the same classes at every start (spark-submit, the
SparkContext, the SparkSession, the first query); JDK 17's dynamic class-data sharing (CDS) archives them once and
maps them at later starts (BENCHMARKS.md: a cold read job ~14 s -> ~10 s on two cores). Opt-in, per Spark connection:
its extra names the archive, a path on the machine that runs spark-submit, in a directory only the task's user can
write (the JVM maps what it finds there): ``{"class-data-archive": "/var/cache/airflow/spark-driver.jsa"}``.

1. Nothing changes without that setting, in cluster deploy mode (the driver's JVM starts elsewhere), or when the
   submission's ``spark.driver.extraJavaOptions`` already choose class-data sharing options themselves; nor, with
   a warning, when another local user could write the archive: its folder must belong to this user (or root) and
   be writable by no one else, and an existing archive must be this user's, writable by no one else.
2. The archive exists: the driver JVM maps it (``-XX:SharedArchiveFile``). An archive the JVM cannot use (another
   JDK, another Spark's classpath) is skipped by the JVM with one warning line, and the job runs as it would without.
   After a Spark or JDK upgrade, delete the file to have it written again.
3. It does not exist: this run writes one as its JVM exits (``-XX:ArchiveClassesAtExit``: the run takes some
   seconds longer, once) to a private name beside it, with the JVM's archive messages below error level off so that
   the job's result stays the last line of its output. When the job succeeds the file is renamed into place (atomic:
   concurrent first runs each write their own, and the last rename wins); otherwise it is deleted.
4. The options are appended to the submission's ``spark.driver.extraJavaOptions``, an option whose path holds
   whitespace, quotes or backslashes in double quotes with those escaped (Spark splits the value as a shell would).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import uuid
from collections.abc import Mapping
from pathlib import Path

from airflow_iceberg_provider.private_files import why_not_private

log = logging.getLogger(__name__)
CONNECTION_EXTRA = "class-data-archive"
DRIVER_JAVA_OPTIONS_CONF = "spark.driver.extraJavaOptions"
# Options that show the submission manages class-data sharing itself (step 1).
_OWN_SHARING_OPTIONS = ("-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit", "-Xshare")
_QUIET_DUMP = "-Xlog:cds=error,cds+dynamic=error"


def class_archive_conf(
    conf: Mapping[str, str], driver_is_local: bool, archive: str | None
) -> tuple[dict[str, str], Path | None]:
    """``conf`` with the driver's class-data sharing options (module doc), and the file this run writes, if any."""
    result = dict(conf)
    options = str(result.get(DRIVER_JAVA_OPTIONS_CONF, ""))
    if not archive or not driver_is_local or any(option in options for option in _OWN_SHARING_OPTIONS):
        return result, None
    target = Path(archive).expanduser()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        log.warning("class-data archive %s cannot be written (%s); the job runs without one", target, error)
        return result, None
    unsafe = _why_others_could_change(target)
    if unsafe is not None:  # the JVM maps what it finds there: another user must not be able to put it there
        log.warning("class-data archive %s is not used: %s; the job runs without one", target, unsafe)
        return result, None
    if target.is_file():
        result[DRIVER_JAVA_OPTIONS_CONF] = f"{options} {_java_option('-XX:SharedArchiveFile', target)}".strip()
        return result, None
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.partial")
    dump = _java_option("-XX:ArchiveClassesAtExit", partial)
    result[DRIVER_JAVA_OPTIONS_CONF] = f"{options} {dump} {_QUIET_DUMP}".strip()
    log.info("the driver JVM writes a class-data archive for later runs as it exits: %s", target)
    return result, partial


def _why_others_could_change(target: Path) -> str | None:
    """Why another local user could write or swap ``target`` (step 1), or None: its folder must belong to this user
    (or root) and be writable by no one else, and an existing archive must be this user's and writable by no one
    else (``private_files.why_not_private``)."""
    folder = target.parent.stat()
    if folder.st_uid not in (os.getuid(), 0) or folder.st_mode & 0o022:
        return (
            f"its folder {target.parent} is {stat.filemode(folder.st_mode)}, owned by uid {folder.st_uid} "
            "(others could write there)"
        )
    if target.exists() or target.is_symlink():
        return why_not_private(target, "file")
    return None


def _java_option(name: str, path: Path) -> str:
    """``name=path`` as one word of ``spark.driver.extraJavaOptions``, quoted when the path would split it (step 4)."""
    option = f"{name}={path}"
    if not any(character.isspace() or character in "\"'\\" for character in option):
        return option
    return '"' + option.replace("\\", "\\\\").replace('"', '\\"') + '"'


def publish_class_archive(partial: Path, archive: str, succeeded: bool) -> None:
    """Rename the archive a successful run wrote into place; delete it after a failed run (module doc, step 3)."""
    if succeeded and partial.is_file():
        os.replace(partial, Path(archive).expanduser())
        log.info("class-data archive written: %s", archive)
        return
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
