"""Finding an Apache ZooKeeper install and a Java runtime to run it with.

Looked for, in order: $ZOOKEEPER_HOME (a release tarball: jars in lib/), Debian's package
(/usr/share/zookeeper, jars in /usr/share/java), then `zkServer.sh` on PATH. We build the
classpath ourselves instead of calling zkServer.sh: Debian's script insists on
/etc/zookeeper/conf and /var/log/zookeeper, while running the JVM directly works for any
config file, data dir and log dir, and lets us wait on the process itself.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

DEBIAN_HOME = Path("/usr/share/zookeeper")
DEBIAN_JARS = Path("/usr/share/java")
INSTALL_HINT = "install it with `sudo apt-get install zookeeper` (Debian/Ubuntu) or set ZOOKEEPER_HOME"


class ZooKeeperNotFoundError(RuntimeError):
    """No usable ZooKeeper install or no Java runtime."""


@dataclass(frozen=True, slots=True)
class ZooKeeperInstall:
    home: Path
    classpath: tuple[str, ...]
    java: str
    # Which logging backend the jars bring: "log4j" (Debian, through slf4j-log4j12),
    # "logback" (release tarballs since 3.8), or "none" (logs are lost; stdout still works).
    logging: str


def find_zookeeper() -> ZooKeeperInstall:
    java = find_java()
    candidates: list[tuple[str, Path]] = []
    if os.environ.get("ZOOKEEPER_HOME"):
        candidates.append(("ZOOKEEPER_HOME", Path(os.environ["ZOOKEEPER_HOME"])))
    candidates.append(("Debian package", DEBIAN_HOME))
    script = shutil.which("zkServer.sh")
    if script:
        candidates.append(("zkServer.sh on PATH", Path(script).resolve().parent.parent))
    for _, home in candidates:
        found = _install_at(home, java)
        if found is not None:
            return found
    looked = ", ".join(f"{what} ({home})" for what, home in candidates)
    if not script:
        looked += ", zkServer.sh on PATH (not found)"
    raise ZooKeeperNotFoundError(f"Apache ZooKeeper not found (looked at {looked}): {INSTALL_HINT}")


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperNotFoundError(
            "No Java runtime found (JAVA_HOME unset and no `java` on PATH): ZooKeeper needs one; "
            "`sudo apt-get install zookeeper` brings it in"
        )
    return java


def _install_at(home: Path, java: str) -> ZooKeeperInstall | None:
    # Release tarball layout: zookeeper-<v>.jar in lib/ (3.5+) or at the top (3.4).
    lib_jars = sorted(home.glob("lib/*.jar")) + sorted(home.glob("zookeeper-*.jar"))
    if any(j.name.startswith("zookeeper-") for j in lib_jars):
        logging = (
            "logback"
            if any(j.name.startswith("logback-classic") for j in lib_jars)
            else ("log4j" if any(j.name.startswith("slf4j-log4j12") for j in lib_jars) else "none")
        )
        return ZooKeeperInstall(home, tuple(str(j) for j in lib_jars), java, logging)
    # Debian layout: the scripts in /usr/share/zookeeper/bin, the jar in /usr/share/java,
    # whose manifest Class-Path names its dependencies (that is all Debian's zkEnv.sh puts on
    # the classpath). It names no slf4j binding, so we add log4j 1.2's when installed.
    main_jar = DEBIAN_JARS / "zookeeper.jar"
    if (home / "bin" / "zkServer.sh").exists() and main_jar.exists():
        classpath = [str(main_jar)]
        binding = [DEBIAN_JARS / "slf4j-log4j12.jar", DEBIAN_JARS / "log4j-1.2.jar"]
        logging = "none"
        if all(j.exists() for j in binding):
            classpath += [str(j) for j in binding]
            logging = "log4j"
        return ZooKeeperInstall(home, tuple(classpath), java, logging)
    return None
