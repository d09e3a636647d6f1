"""Task kinds checked on the final state: files, text processing, permissions and archives.

Each kind is ``draw(rng, level) -> spec`` (see :mod:`.spec`); ``level`` (0-3) sets how many
files there are and what else is in the way (subfolders, look-alike names, more columns). Every
draw makes sure that its ``wrong`` solution really leaves a different state.
"""

from __future__ import annotations

import shlex

import numpy as np

from rollgym.envs.code.terminal_gen.spec import (
    Spec,
    absent,
    archive_is,
    file_is,
    gzip_is,
    mode_is,
    spec,
    text_is,
    tree_is,
)

WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "lambda", "river", "stone", "cloud", "ember",
         "maple", "cedar", "amber", "quartz", "falcon", "harbor", "meadow", "comet", "pixel", "vector", "matrix",
         "tensor", "socket", "kernel", "buffer", "signal", "packet", "thread")
SIZES = (3, 5, 8, 12)  # files (or groups) per level


def pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    """One of ``options``."""
    return str(options[int(rng.integers(len(options)))])


def names(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct short names (a word and a number)."""
    chosen: list[str] = []
    while len(chosen) < n:
        name = f"{pick(rng, WORDS)}{int(rng.integers(1, 100))}"
        if name not in chosen:
            chosen.append(name)
    return chosen


def line(rng: np.random.Generator, n: int, vocabulary: tuple[str, ...] = WORDS) -> str:
    """``n`` words separated by spaces."""
    return " ".join(pick(rng, vocabulary) for _ in range(n))


def lines(rng: np.random.Generator, low: int, high: int) -> str:
    """Between ``low`` and ``high`` lines of a few words each, newline-terminated."""
    return "".join(line(rng, int(rng.integers(1, 7))) + "\n" for _ in range(int(rng.integers(low, high + 1))))


# -- files ---------------------------------------------------------------------------------------------------------
def move_ext(rng: np.random.Generator, level: int) -> Spec:
    """Move the files of one extension from inbox/ to a new folder; the rest stays."""
    ext, *others = [str(e) for e in rng.permutation(["log", "csv", "bak", "tmp", "txt"])]
    dest = f"{pick(rng, ('archive', 'old', 'moved', 'store'))}/{int(rng.integers(2015, 2027))}"
    n = SIZES[level] + 1
    stems = names(rng, n)
    if level == 3:  # names with spaces
        stems = [s.replace(s[-1], " " + s[-1], 1) if i % 2 else s for i, s in enumerate(stems)]
    files = {f"inbox/{s}.{ext if i < n // 2 else pick(rng, others)}": lines(rng, 1, 3) for i, s in enumerate(stems)}
    if level >= 2:  # a subfolder's files stay where they are
        files[f"inbox/keep/{pick(rng, WORDS)}.{ext}"] = lines(rng, 1, 2)
    moved = sorted(p for p in files if p.count("/") == 1 and p.endswith("." + ext))
    checks = [file_is(f"{dest}/{p.split('/')[-1]}", files[p]) for p in moved]
    checks += [absent(p) for p in moved]
    checks += [file_is(p, c) for p, c in files.items() if p not in moved]
    checks.append(tree_is(dest, [p.split("/")[-1] for p in moved]))
    return spec("move_ext", "files", level,
                f"Create the folder {dest} and move every .{ext} file that is directly in inbox/ into it, keeping "
                "names and contents. Leave every other file where it is (subfolders of inbox/ included).",
                files, f"mkdir -p {dest} && mv inbox/*.{ext} {dest}/", f"mkdir -p {dest} && cp inbox/*.{ext} {dest}/",
                checks)


def rename_prefix(rng: np.random.Generator, level: int) -> Spec:
    """Rename every file whose name starts with one prefix to another prefix."""
    folder = pick(rng, ("photos", "reports", "scans", "exports"))
    old, new = (str(w) for w in rng.choice(["draft", "final", "tmp", "img", "rep", "old", "new", "v1", "v2"], 2,
                                           replace=False))
    ext = pick(rng, ("jpg", "txt", "pdf", "dat"))
    files = {f"{folder}/{old}_{i:03d}.{ext}": lines(rng, 1, 2) for i in rng.choice(1000, SIZES[level], replace=False)}
    if level >= 1:  # look-alikes that must keep their names
        files[f"{folder}/x{old}_{int(rng.integers(1000)):03d}.{ext}"] = lines(rng, 1, 2)
        files[f"{folder}/{old}.{ext}"] = lines(rng, 1, 2)
    renamed = {p: f"{folder}/{new}_{p.split('/')[-1][len(old) + 1:]}" for p in files
               if p.split("/")[-1].startswith(old + "_")}
    checks = [file_is(renamed.get(p, p), c) for p, c in files.items()] + [absent(p) for p in renamed]
    return spec("rename_prefix", "files", level,
                f"In {folder}/, rename every file whose name starts with '{old}_' so that it starts with '{new}_' "
                f"instead (e.g. {old}_001.{ext} becomes {new}_001.{ext}). Other files keep their names.",
                files, f'cd {folder} && for f in {old}_*; do mv -- "$f" "{new}_${{f#{old}_}}"; done',
                f'cd {folder} && for f in {old}_*; do cp -- "$f" "{new}_${{f#{old}_}}"; done', checks)


def dedupe(rng: np.random.Generator, level: int) -> Spec:
    """Delete files whose content repeats an earlier file's (held out)."""
    folder = pick(rng, ("pics", "downloads", "inbox", "blobs"))
    groups = [lines(rng, 1, 3) for _ in range(SIZES[level])]
    files: dict[str, str] = {}
    for name in names(rng, SIZES[level] * 2):
        files[f"{folder}/{name}.bin"] = groups[int(rng.integers(len(groups)))]
    first: dict[str, str] = {}
    for path in sorted(files):
        first.setdefault(files[path], path)
    if len(first) == len(files):  # make one duplicate at least
        a, b = sorted(files)[:2]
        files[b] = files[a]
        first = {}
        for path in sorted(files):
            first.setdefault(files[path], path)
    kept = set(first.values())
    checks = [file_is(p, c) for p, c in files.items() if p in kept] + [absent(p) for p in files if p not in kept]
    loop = ('cd {f} && seen=""; for x in $(LC_ALL=C ls {order}); do h=$(sha256sum < "$x" | cut -c1-32); '
            'case "$seen" in *"$h"*) rm -- "$x";; *) seen="$seen $h";; esac; done')
    return spec("dedupe", "files", level,
                f"Some files in {folder}/ have the same content. For each group of identical files keep only the "
                "one whose name sorts first (byte order, as LC_ALL=C ls lists them) and delete the others.",
                files, loop.format(f=folder, order=""), loop.format(f=folder, order="-r"), checks)


# -- text ----------------------------------------------------------------------------------------------------------
def count_word(rng: np.random.Generator, level: int) -> Spec:
    """Count the lines with a whole word in every .txt file under data/."""
    word = pick(rng, ("ERROR", "WARN", "FAIL", "TIMEOUT", "DENIED"))
    vocabulary = (*WORDS[:8], word, word + "S", word.lower(), word + "_OLD", "ok", "done")
    files: dict[str, str] = {}
    for i in range(SIZES[level]):
        folder = "data" if level < 2 or i % 2 else f"data/{pick(rng, ('old', 'extra', 'more'))}"
        files[f"{folder}/part{i}.txt"] = "".join(line(rng, int(rng.integers(1, 6)), vocabulary) + "\n"
                                                 for _ in range(int(rng.integers(2, 8))))
    files[next(iter(files))] += f"{word}S {word.lower()}\n{pick(rng, WORDS)} {word}\n"  # a substring; one at least
    count = sum(word in ln.split() for c in files.values() for ln in c.splitlines())
    return spec("count_word", "text", level,
                f"Count the lines, over every .txt file under data/ (subfolders included), that contain the word "
                f"{word} as a whole word, case-sensitive ({word}S, {word}_OLD or {word.lower()} do not count), and "
                "write just that number to answer.txt.",
                files, f"find data -name '*.txt' -exec cat {{}} + | grep -cw -- {word} > answer.txt",
                f"find data -name '*.txt' -exec cat {{}} + | grep -c -- {word} > answer.txt",
                [text_is("answer.txt", str(count))])


def csv_sum(rng: np.random.Generator, level: int) -> Spec:
    """Sum one column of a CSV over the rows whose other column has a value."""
    regions = [pick(rng, ("north", "south", "east", "west", "central"))]
    while len(regions) < 3:
        r = pick(rng, ("north", "south", "east", "west", "central"))
        regions += [] if r in regions else [r]
    columns = ["id", "region", "amount"] + (["units", "note"] if level >= 2 else [])
    if level >= 1:
        columns = [str(c) for c in rng.permutation(columns)]
    rows = []
    for i in range(SIZES[level] * 3):
        value = {"id": str(i + 1), "region": regions[i % 3] if i < 3 else pick(rng, regions),
                 "amount": str(int(rng.integers(1, 1000))), "units": str(int(rng.integers(1, 20))),
                 "note": pick(rng, WORDS)}
        rows.append(",".join(value[c] for c in columns))
    region = regions[0]
    total = sum(int(r.split(",")[columns.index("amount")]) for r in rows
                if r.split(",")[columns.index("region")] == region)
    file = "sales.csv"
    content = ",".join(columns) + "\n" + "\n".join(rows) + "\n"
    r_col, a_col = columns.index("region") + 1, columns.index("amount") + 1
    return spec("csv_sum", "text", level,
                f"{file} is a CSV file with a header line. Write to answer.txt the sum of the 'amount' column over "
                f"the rows whose 'region' is {region} (just the number).",
                {file: content},
                f"awk -F, 'NR>1 && ${r_col}==\"{region}\" {{s+=${a_col}}} END {{print s+0}}' {file} > answer.txt",
                f"awk -F, 'NR>1 {{s+=${a_col}}} END {{print s+0}}' {file} > answer.txt",
                [text_is("answer.txt", str(total))])


def sort_uniq(rng: np.random.Generator, level: int) -> Spec:
    """The sorted distinct values of one colon-separated field."""
    fields = ["user", "shell", "group", "home"]
    k = int(rng.integers(1, 4))
    pools = {"user": list(WORDS), "shell": ["bash", "zsh", "fish", "sh", "dash", "ksh"],
             "group": ["staff", "admin", "dev", "ops", "guest", "audit"], "home": ["home", "srv", "opt", "var"]}
    rows = [[pick(rng, pools[f]) for f in fields] for _ in range(SIZES[level] * 2)]
    values = [r[k] for r in rows]
    if len(set(values)) < 2:
        rows[-1][k] = next(v for v in pools[fields[k]] if v != values[0])
    rows.append(list(rows[0]))  # a repeat after other values: uniq alone keeps it
    want = sorted({r[k] for r in rows})
    content = "".join(":".join(r) + "\n" for r in rows)
    return spec("sort_uniq", "text", level,
                f"users.txt has lines of four colon-separated fields ({':'.join(fields)}). Write the distinct values "
                f"of the '{fields[k]}' field to out.txt, one per line, sorted alphabetically.",
                {"users.txt": content}, f"cut -d: -f{k + 1} users.txt | LC_ALL=C sort -u > out.txt",
                f"cut -d: -f{k + 1} users.txt | uniq > out.txt", [text_is("out.txt", "\n".join(want))])


def replace_text(rng: np.random.Generator, level: int) -> Spec:
    """Replace a host name in every .cfg file under conf/, nothing else."""
    old = f"{pick(rng, ('db', 'cache', 'queue', 'api'))}{int(rng.integers(1, 9))}.internal"
    new = f"{pick(rng, ('db', 'cache', 'queue', 'api'))}{int(rng.integers(10, 99))}.prod"
    files: dict[str, str] = {}
    for i in range(SIZES[level]):
        folder = "conf" if level < 2 or i % 2 == 0 else "conf/sites"
        files[f"{folder}/{pick(rng, WORDS)}{i}.cfg"] = (f"name={pick(rng, WORDS)}\nhost={old}\n"
                                                        f"port={int(rng.integers(1000, 9999))}\n")
    first = sorted(files)[0]
    files[first] += f"backup={old},{old}\n"  # two on a line: a replacement without g misses one
    files["conf/README.txt"] = f"The old host was {old}; keep this note as it is.\n"
    escaped = old.replace(".", "\\.")
    checks = [file_is(p, c.replace(old, new) if p.endswith(".cfg") else c) for p, c in files.items()]
    return spec("replace_text", "text", level,
                f"Replace every occurrence of {old} with {new} in every .cfg file under conf/ (subfolders "
                "included). Do not change any other file.",
                files, f"find conf -name '*.cfg' -exec sed -i 's/{escaped}/{new}/g' {{}} +",
                f"sed -i 's/{escaped}/{new}/' conf/*.cfg", checks)


def top_ip(rng: np.random.Generator, level: int) -> Spec:
    """The address that made the most requests in an access log (held out)."""
    ips = [f"10.{int(rng.integers(256))}.{int(rng.integers(256))}.{i + 1}" for i in range(SIZES[level] + 1)]
    counts = {ip: int(rng.integers(1, 6)) for ip in ips}
    top = ips[-1]
    counts[top] = max(counts.values()) + int(rng.integers(1, 3))
    entries = [ip for ip, c in counts.items() for _ in range(c)]
    entries = [str(e) for e in rng.permutation(entries)]
    if entries[0] == top:
        entries = entries[1:] + entries[:1]
    log = "".join(f'{ip} - - [04/Dec/2026:10:{i % 60:02d}:00] "GET /{pick(rng, WORDS)} HTTP/1.1" '
                  f'{pick(rng, ("200", "404", "500", "301"))}\n' for i, ip in enumerate(entries))
    return spec("top_ip", "text", level,
                "access.log is a web server log (the client's address first on each line). Write to answer.txt the "
                "address that made the most requests (just the address).",
                {"access.log": log},
                "awk '{print $1}' access.log | sort | uniq -c | sort -rn | head -1 | awk '{print $2}' > answer.txt",
                "head -1 access.log | awk '{print $1}' > answer.txt", [text_is("answer.txt", top)])


# -- permissions ---------------------------------------------------------------------------------------------------
def chmod_set(rng: np.random.Generator, level: int) -> Spec:
    """Give some files exact modes."""
    paths = [f"{pick(rng, ('bin', 'etc', 'keys', 'lib'))}/{n}.{pick(rng, ('sh', 'conf', 'key', 'py'))}"
             for n in names(rng, SIZES[level])]
    files = {p: lines(rng, 1, 2) for p in paths}
    targets = {p: int(str(pick(rng, ("755", "700", "644", "600", "640", "750", "444", "500"))), 8) for p in paths}
    if all(m == 0o755 for m in targets.values()):
        targets[paths[0]] = 0o600
    listing = "\n".join(f"  {p}: {m:o}" for p, m in targets.items())
    return spec("chmod_set", "permissions", level,
                f"Give these files exactly these permission modes (octal), and change nothing else:\n{listing}",
                files, " && ".join(f"chmod {m:o} {shlex.quote(p)}" for p, m in targets.items()),
                "chmod 755 " + " ".join(shlex.quote(p) for p in paths),
                [mode_is(p, m) for p, m in targets.items()] + [file_is(p, c) for p, c in files.items()])


def private_dir(rng: np.random.Generator, level: int) -> Spec:
    """A private folder: folders 700, files 600 (held out)."""
    top = pick(rng, ("keys", "secrets", "vault", "private"))
    files = {f"{top}/{n}.pem": lines(rng, 1, 2) for n in names(rng, SIZES[level])}
    if level >= 2:
        files[f"{top}/old/{pick(rng, WORDS)}.pem"] = lines(rng, 1, 2)
    folders = sorted({p.rsplit("/", 1)[0] for p in files})
    return spec("private_dir", "permissions", level,
                f"Make {top}/ private: {top}/ and every folder inside it mode 700, every file inside it mode 600.",
                files, f"find {top} -type d -exec chmod 700 {{}} + && find {top} -type f -exec chmod 600 {{}} +",
                f"chmod -R 600 {top}", [mode_is(d, 0o700) for d in folders] + [mode_is(p, 0o600) for p in files])


# -- archives ------------------------------------------------------------------------------------------------------
def gzip_logs(rng: np.random.Generator, level: int) -> Spec:
    """Compress every .log file in logs/ in place."""
    files = {f"logs/{n}.log": lines(rng, 2, 6) for n in names(rng, SIZES[level])}
    files[f"logs/{pick(rng, WORDS)}.txt"] = lines(rng, 1, 2)
    logs = [p for p in files if p.endswith(".log")]
    checks = [gzip_is(p + ".gz", files[p]) for p in logs] + [absent(p) for p in logs]
    checks += [file_is(p, c) for p, c in files.items() if p not in logs]
    return spec("gzip_logs", "archives", level,
                "Compress every .log file in logs/ with gzip, so that logs/NAME.log becomes logs/NAME.log.gz and the "
                "uncompressed file is gone. Leave other files as they are.",
                files, "gzip logs/*.log", "gzip -k logs/*.log", checks)


def tar_create(rng: np.random.Generator, level: int) -> Spec:
    """A tar.gz of the files of one extension under project/."""
    ext, other = (str(e) for e in rng.choice(["py", "md", "txt", "json", "sh"], 2, replace=False))
    files: dict[str, str] = {}
    for i, n in enumerate(names(rng, SIZES[level] + 2)):
        sub = "project" if level == 0 or i % 3 else f"project/{pick(rng, ('src', 'docs', 'lib'))}"
        files[f"{sub}/{n}.{ext if i % 2 == 0 else other}"] = lines(rng, 1, 3)
    name = pick(rng, ("src", "bundle", "release", "backup")) + ".tar.gz"
    members = {p: c for p, c in files.items() if p.endswith("." + ext)}
    return spec("tar_create", "archives", level,
                f"Create a gzip-compressed tar archive {name} in the working folder holding every .{ext} file under "
                f"project/ (member names start with project/) and no other file.",
                files, f"find project -type f -name '*.{ext}' | sort | tar -czf {name} -T -",
                f"tar -czf {name} project", [archive_is(name, members)])


def backup_each(rng: np.random.Generator, level: int) -> Spec:
    """One tar.gz per folder of projects/ (held out)."""
    projects = names(rng, 2 + level)
    files = {f"projects/{p}/{n}.txt": lines(rng, 1, 3) for p in projects for n in names(rng, 2)}
    checks = [archive_is(f"backups/{p}.tar.gz", {k.removeprefix("projects/"): c for k, c in files.items()
                                                  if k.startswith(f"projects/{p}/")}) for p in projects]
    checks.append(tree_is("backups", [f"{p}.tar.gz" for p in projects]))
    return spec("backup_each", "archives", level,
                "For every folder in projects/, create backups/NAME.tar.gz (gzip-compressed tar) holding that folder "
                "and its files, with member names starting with NAME/. Put nothing else in backups/.",
                files, 'mkdir -p backups && for d in projects/*/; do n=$(basename "$d"); '
                       'tar -czf "backups/$n.tar.gz" -C projects "$n"; done',
                "mkdir -p backups && tar -czf backups/all.tar.gz -C projects .", checks)
