"""Fetches Debian package indexes and packages through a private apt setup.

Everything apt writes (lists, cache, logs) lives under the cache directory; the system's apt
configuration and lists are only read (dpkg status), never changed. Downloads and extractions
are cached by package version, so a rerun only does work for packages whose version changed.
"""

import os
import re
import subprocess
import sys
import time

ARCHIVE_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SUITES = [
    ("http://deb.debian.org/debian", "bookworm"),
    ("http://deb.debian.org/debian", "bookworm-updates"),
    ("http://deb.debian.org/debian-security", "bookworm-security"),
]

# Never fetched for training data: held out for independent evaluation (see README.md).
RESERVED_PACKAGES = ("debian-handbook",)


def log(msg):
    print(f"[corpus {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Apt:
    """A private apt configuration rooted at `root` (lists, cache, logs, sources)."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.conf = os.path.join(self.root, "apt.conf")
        self.lists = os.path.join(self.root, "lists")
        self._packages = None
        self._write_config()

    def _write_config(self):
        r = self.root
        for d in ("etc/apt.conf.d", "etc/sources.list.d", "etc/preferences.d",
                  "lists/partial", "cache/archives/partial", "log"):
            os.makedirs(os.path.join(r, d), exist_ok=True)
        sources = "".join(
            f"deb [signed-by={ARCHIVE_KEYRING}] {uri} {suite} main\n" for uri, suite in SUITES)
        _write_if_changed(os.path.join(r, "etc/sources.list"), sources)
        _write_if_changed(os.path.join(r, "etc/apt.conf"), "")
        # Dir::Etc::parts points at an empty private directory so that the system's
        # apt.conf.d (which sets Acquire::Languages "none") does not apply here.
        conf = f"""\
Dir::Etc::parts "{r}/etc/apt.conf.d";
Dir::Etc::main "{r}/etc/apt.conf";
Dir::Etc::sourcelist "{r}/etc/sources.list";
Dir::Etc::sourceparts "{r}/etc/sources.list.d";
Dir::Etc::preferencesparts "{r}/etc/preferences.d";
Dir::State::Lists "{r}/lists";
Dir::Cache "{r}/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Dir::Log "{r}/log";
Acquire::Languages {{ "en"; "de"; }};
Acquire::GzipIndexes "true";
Acquire::Check-Valid-Until "false";
Acquire::Retries "3";
APT::Update::Post-Invoke-Success "";
Acquire::IndexTargets::deb::Contents-deb {{
  MetaKey "$(COMPONENT)/Contents-$(ARCHITECTURE)";
  ShortDescription "Contents-$(ARCHITECTURE)";
  Description "$(RELEASE)/$(COMPONENT) $(ARCHITECTURE) Contents (deb)";
  flatMetaKey "Contents-$(ARCHITECTURE)";
  flatDescription "$(RELEASE) Contents (deb)";
  PDiffs "false";
  KeepCompressed "true";
}};
"""
        _write_if_changed(self.conf, conf)

    def env(self):
        e = dict(os.environ)
        e["APT_CONFIG"] = self.conf
        e["LC_ALL"] = "C"
        return e

    # ---- index files -------------------------------------------------------------------------

    def update(self, force=False):
        """Runs `apt-get update` on the private lists when they are missing (or when forced).

        Cached lists are reused as they are, so that reruns see the same package versions.
        """
        stamp = os.path.join(self.root, "update.stamp")
        if not force and os.path.exists(stamp) and self.list_files("Translation-de") \
                and self.list_files("_Contents-all"):
            with open(stamp) as f:
                log(f"apt lists: cached from {f.read().strip()} (--update-lists refreshes)")
            return
        log("apt lists: apt-get update (Packages, Translation-en/-de, Contents) ...")
        subprocess.run(["apt-get", "update", "-q"], env=self.env(), check=True,
                       stdout=sys.stderr)
        with open(stamp, "w") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
        self._packages = None

    def lists_date(self):
        stamp = os.path.join(self.root, "update.stamp")
        return open(stamp).read().strip() if os.path.exists(stamp) else None

    def list_files(self, suffix):
        """List files whose name (minus compression extension) ends with `suffix`, sorted."""
        out = []
        for name in sorted(os.listdir(self.lists)):
            base = re.sub(r"\.(lz4|gz|xz|zst|bz2)$", "", name)
            if base.endswith(suffix):
                out.append(os.path.join(self.lists, name))
        return out

    def cat(self, path):
        """Yields decoded lines of an index file, whatever apt compressed it with."""
        p = subprocess.Popen(["/usr/lib/apt/apt-helper", "cat-file", path],
                             stdout=subprocess.PIPE, env=self.env())
        for raw in p.stdout:
            yield raw.decode("utf-8", "replace")
        p.stdout.close()
        if p.wait() != 0:
            raise RuntimeError(f"apt-helper cat-file {path} failed")

    def packages(self):
        """Candidate version of each binary package: {name: {Version, Size, Filename, Source}}.

        The highest version across the suites wins (security/updates over the release).
        """
        if self._packages is not None:
            return self._packages
        pk = {}
        for path in self.list_files("_Packages"):
            for rec in parse_deb822(self.cat(path)):
                name = rec.get("Package")
                if not name:
                    continue
                old = pk.get(name)
                if old is None or version_gt(rec["Version"], old["Version"]):
                    pk[name] = {
                        "Version": rec["Version"],
                        "Size": int(rec.get("Size", "0")),
                        "Filename": rec.get("Filename", ""),
                        "Source": rec.get("Source", name).split(" ")[0],
                        "Section": rec.get("Section", ""),
                    }
        self._packages = pk
        return pk

    def contents_grep(self, regex):
        """(path, [packages]) for each file in the Contents indexes whose path matches regex."""
        rx = re.compile(regex)
        out = []
        for path in self.list_files("_Contents-amd64") + self.list_files("_Contents-all"):
            for line in self.cat(path):
                if not rx.search(line):
                    continue
                # "path<whitespace>section/pkg,section/pkg"; paths may contain spaces.
                m = re.match(r"^(.*\S)\s+(\S+)$", line.rstrip("\n"))
                if not m:
                    continue
                pkgs = [q.split("/")[-1] for q in m.group(2).split(",")]
                out.append((m.group(1), pkgs))
        return out

    # ---- packages ----------------------------------------------------------------------------

    def download(self, names, deb_dir):
        """Downloads the candidate .deb of each package (cached); returns {name: path}."""
        for n in names:
            if any(n.startswith(r) for r in RESERVED_PACKAGES):
                raise SystemExit(f"refusing to fetch reserved evaluation package {n}")
        os.makedirs(deb_dir, exist_ok=True)
        pk = self.packages()
        paths, missing = {}, []
        for n in names:
            if n not in pk:
                log(f"warning: package {n} not in the archive indexes; skipped")
                continue
            path = os.path.join(deb_dir, deb_file_name(n, pk[n]))
            paths[n] = path
            if not os.path.exists(path):
                missing.append(n)
        if missing:
            total = sum(pk[n]["Size"] for n in missing)
            log(f"downloading {len(missing)} packages ({total / 1e6:.0f} MB) ...")
            batch = 150
            for i in range(0, len(missing), batch):
                chunk = missing[i:i + batch]
                cmd = ["apt-get", "download", "-q"] + [f"{n}={pk[n]['Version']}" for n in chunk]
                r = subprocess.run(cmd, cwd=deb_dir, env=self.env(), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
                if r.returncode != 0:
                    # A bad name fails the whole batch; retry one by one to isolate it.
                    for n in chunk:
                        r1 = subprocess.run(
                            ["apt-get", "download", "-q", f"{n}={pk[n]['Version']}"],
                            cwd=deb_dir, env=self.env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
                        if r1.returncode != 0:
                            log(f"warning: download of {n} failed: {r1.stderr.strip()[-300:]}")
                log(f"  downloaded {min(i + batch, len(missing))}/{len(missing)}")
        return {n: p for n, p in paths.items() if os.path.exists(p)}

    def extract(self, name, deb_path, dest_root, patterns):
        """Extracts files matching tar wildcard `patterns` from a .deb into dest_root/name.

        Cached: a stamp records the .deb file name and the patterns.
        """
        dest = os.path.join(dest_root, name)
        key = os.path.basename(deb_path) + "\n" + "\n".join(patterns)
        stamp = os.path.join(dest_root, name + ".stamp")
        if os.path.exists(stamp) and open(stamp).read() == key:
            return dest
        if os.path.exists(dest):
            subprocess.run(["rm", "-rf", "--", dest], check=True)
        os.makedirs(dest)
        p1 = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb_path], stdout=subprocess.PIPE)
        r = subprocess.run(["tar", "-x", "-C", dest, "--wildcards", "--no-same-owner",
                            "--no-same-permissions", "--warning=no-unknown-keyword"] + patterns,
                           stdin=p1.stdout, stderr=subprocess.PIPE, text=True)
        p1.stdout.close()
        p1.wait()
        # tar exits 2 when a pattern matched nothing; that is fine here.
        if p1.returncode != 0 or (r.returncode not in (0, 2)):
            raise RuntimeError(f"extracting {deb_path}: {r.stderr[-500:]}")
        with open(stamp, "w") as f:
            f.write(key)
        return dest


def fetch_and_extract(apt, cache, names, patterns, label):
    """Downloads `names` and extracts `patterns` from each; returns {name: extracted dir}."""
    debs = apt.download(names, os.path.join(cache, "debs"))
    out = {}
    t0 = time.time()
    for i, n in enumerate(sorted(debs)):
        out[n] = apt.extract(n, debs[n], os.path.join(cache, "extract"), patterns)
        if (i + 1) % 200 == 0 or (time.time() - t0 > 30 and (i + 1) % 20 == 0):
            log(f"  {label}: extracted {i + 1}/{len(debs)}")
    return out


def parse_deb822(lines):
    """Yields dicts from a deb822 stream; continuation lines are kept with their newlines."""
    rec, key = {}, None
    for line in lines:
        if line in ("\n", ""):
            if rec:
                yield rec
            rec, key = {}, None
            continue
        if line[0] in " \t" and key:
            rec[key] += "\n" + line.rstrip("\n")
            continue
        k, _, v = line.partition(":")
        key = k
        rec[k] = v.strip()
    if rec:
        yield rec


def deb_file_name(name, rec):
    """The file name `apt-get download` gives a package (epoch colon written as %3a)."""
    arch = os.path.basename(rec["Filename"]).rsplit("_", 1)[-1]
    return f"{name}_{rec['Version'].replace(':', '%3a')}_{arch}"


def version_gt(a, b):
    if a == b:
        return False
    return subprocess.run(["dpkg", "--compare-versions", a, "gt", b]).returncode == 0


def _write_if_changed(path, text):
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as f:
        f.write(text)
