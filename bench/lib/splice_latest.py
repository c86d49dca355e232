#!/usr/bin/env python3
"""Write bench/results/latest.md from a run of some tables (bench/run.sh).

usage: splice_latest.py RUN.md OLD.md OUT.md

RUN.md is this run's output: its header (the machine table: date, commit,
mode) and one section per table it ran ("## Table N: ...").  Each of those
sections gets a line saying when and on which commit it was measured.  A
table this run did not measure keeps its section from OLD.md (the previous
latest.md, if any), stamped with OLD.md's own date and commit when it has no
stamp yet; so a run of some tables (BENCH_TABLES) updates those and keeps the
rest, and every table says which run it comes from.
"""
import re
import sys

HEADING = re.compile(r"^## Table (\d+):", re.M)
STAMP = "_Measured "


def split(text):
    """(header, {table number: section text})."""
    marks = list(HEADING.finditer(text))
    if not marks:
        return text, {}
    sections = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        sections[int(m.group(1))] = text[m.start():end].rstrip("\n") + "\n"
    return text[: marks[0].start()], sections


def machine(header, key):
    m = re.search(r"^\| %s \| (.*?) \|$" % re.escape(key), header, re.M)
    return m.group(1) if m else "unknown"


def stamp(section, header):
    if STAMP in section:
        return section
    return section + "\n%s%s UTC on commit %s (%s run)._\n" % (
        STAMP,
        machine(header, "date (UTC)"),
        machine(header, "commit"),
        machine(header, "mode"),
    )


def main():
    run_path, old_path, out_path = sys.argv[1:4]
    run_header, run_sections = split(open(run_path).read())
    try:
        old_header, old_sections = split(open(old_path).read())
    except OSError:
        old_header, old_sections = "", {}
    out = {n: stamp(s, old_header) for n, s in old_sections.items()}
    out.update({n: stamp(s, run_header) for n, s in run_sections.items()})
    kept = sorted(set(out) - set(run_sections))
    header = run_header.rstrip("\n") + "\n\n"
    if kept:
        header += (
            "This run measured table(s) %s; table(s) %s are kept from earlier runs. Each table "
            "ends with the date and commit it was measured on.\n\n"
            % (", ".join(map(str, sorted(run_sections))), ", ".join(map(str, kept)))
        )
    with open(out_path, "w") as f:
        f.write(header + "\n".join(out[n] for n in sorted(out)))


if __name__ == "__main__":
    main()
