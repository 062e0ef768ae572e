"""kafkapy-spark-submit [spark-submit options] JOB.py|JOB-NAME [--spec job.yaml] [job args]

spark-submit for kafkapy's pipeline jobs, from a virtualenv with nothing else installed:

- SPARK_HOME is the pip-installed pyspark's (plain spark-submit from a virtualenv has none);
- PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON are this interpreter (the one with kafkapy and
  pyarrow), unless already set;
- kafkapy is zipped and added to --py-files, so executors on other machines import the same
  data source code (they still need kafkapy's dependencies installed, see README);
- without --master the job runs on local[*] with the Spark UI off; any --master
  (spark://..., yarn, k8s://...) and every other option pass through unchanged;
- JOB-NAME (e.g. topic_to_parquet) names a job in the project's spark/ directory.

Missing Java or pyspark stop it with a message saying what to install, exit code 2.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

# spark-submit options that take no value; every other option takes one (SparkSubmitArguments).
FLAGS = frozenset({"--verbose", "-v", "--supervise", "--help", "-h", "--version", "--kill", "--status"})
PROG = "kafkapy-spark-submit"


class SubmitError(Exception):
    """Something to tell the user before Spark starts."""


def split_args(argv: Sequence[str]) -> tuple[list[str], str, list[str]]:
    """(spark-submit options, application, job args): the application is the first argument
    that is neither an option nor an option's value."""
    options: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            return options, arg, list(argv[i + 1 :])
        options.append(arg)
        if arg not in FLAGS and "=" not in arg:
            if i + 1 >= len(argv):
                raise SubmitError(f"option {arg} needs a value")
            options.append(argv[i + 1])
            i += 1
        i += 1
    raise SubmitError("no job given: kafkapy-spark-submit [spark-submit options] JOB.py|JOB-NAME [job args]")


def option_value(options: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(options):
        if arg == name and i + 1 < len(options):
            return options[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def has_conf(options: Sequence[str], key: str) -> bool:
    values = [options[i + 1] for i, a in enumerate(options[:-1]) if a in ("--conf", "-c")]
    values += [a.split("=", 1)[1] for a in options if a.startswith("--conf=")]
    return any(v.split("=", 1)[0].strip() == key for v in values)


def jobs_dirs() -> list[Path]:
    """Where job names are looked up: ./spark, then the spark/ beside the kafkapy sources."""
    import kafkapy

    return [Path.cwd() / "spark", Path(kafkapy.__file__).resolve().parent.parent / "spark"]


def resolve_job(app: str) -> str:
    if app.endswith(".py") or os.sep in app:
        if not Path(app).is_file():
            raise SubmitError(f"job file {app} not found")
        return app
    for d in jobs_dirs():
        candidate = d / f"{app}.py"
        if candidate.is_file():
            return str(candidate)
    known = sorted(
        {p.stem for d in jobs_dirs() if d.is_dir() for p in d.glob("*.py") if not p.stem.startswith("_")}
    )
    raise SubmitError(f"no job named {app!r}; known jobs: {', '.join(known) or 'none'}")


def add_py_file(options: Sequence[str], path: str) -> list[str]:
    """The options with `path` appended to the user's own --py-files list."""
    out = list(options)
    for i, arg in enumerate(out):
        if arg == "--py-files" and i + 1 < len(out):
            out[i + 1] = f"{out[i + 1]},{path}"
        elif arg.startswith("--py-files="):
            out[i] = f"{arg},{path}"
    return out


def find_java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise SubmitError(
            "Java not found: Spark needs Java 17 or newer. Install it (Debian: apt-get install "
            "openjdk-17-jre-headless) or set JAVA_HOME."
        )
    return found


def find_spark_home() -> str:
    if importlib.util.find_spec("pyspark") is None:
        raise SubmitError(
            f"pyspark is not installed in {sys.executable}: pip install 'kafkapy[spark]' "
            "(PySpark >= 4.0 and pyarrow)."
        )
    if os.environ.get("SPARK_HOME"):
        return os.environ["SPARK_HOME"]
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.origin is not None
    home = Path(spec.origin).parent  # pip's pyspark is a whole Spark distribution
    if not (home / "bin" / "spark-submit").exists():
        raise SubmitError(f"{home} has no bin/spark-submit; set SPARK_HOME to a Spark distribution")
    return str(home)


def kafkapy_zip(directory: str) -> str:
    """kafkapy (and the pyspark_kafkapy registration module) as a zip for --py-files."""
    import kafkapy

    root = Path(kafkapy.__file__).resolve().parent.parent
    path = Path(directory) / "kafkapy.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for package in ("kafkapy", "pyspark_kafkapy"):
            for f in sorted((root / package).rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".json", ".typed"):
                    z.write(f, f.relative_to(root))
    return str(path)


def build_command(argv: Sequence[str], spark_home: str, zip_path: str) -> list[str]:
    options, app, job_args = split_args(argv)
    job = resolve_job(app)
    extra: list[str] = []
    master = option_value(options, "--master")
    if master is None:
        extra += ["--master", "local[*]"]
        master = "local[*]"
    if master.startswith("local") and not has_conf(options, "spark.ui.enabled"):
        extra += ["--conf", "spark.ui.enabled=false"]
    if option_value(options, "--py-files") is None:
        extra += ["--py-files", zip_path]
    else:
        options = add_py_file(options, zip_path)
    return [str(Path(spark_home) / "bin" / "spark-submit"), *options, *extra, job, *job_args]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    try:
        find_java()
        spark_home = find_spark_home()
        with tempfile.TemporaryDirectory(prefix="kafkapy-spark-submit-") as tmp:
            command = build_command(args, spark_home, kafkapy_zip(tmp))
            env = dict(os.environ, SPARK_HOME=spark_home)
            env.setdefault("PYSPARK_PYTHON", sys.executable)
            env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
            return subprocess.call(command, env=env)
    except SubmitError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
