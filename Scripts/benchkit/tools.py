"""The rows: how each tool (keepsake and its variants, tar, restic, borg, their S3 and encrypted
forms) backs up, backs up again, restores and verifies."""

import json
import os
import secrets
import shutil
import subprocess

from .common import Failed, command_env, have_command, tree_size


class Tool:
    """One row family: how a tool backs up, backs up again, restores and verifies."""
    name = ""
    binary = None
    incremental = True
    cold = False  # takes part in the cold-cache rows (full backup and full restore)
    needs = ()  # commands it runs that --no-install aside the bench installs (DEBIAN_PACKAGES)

    def __init__(self, bench):
        self.bench = bench
        self.repo = None

    def available(self):
        return self.binary is None or shutil.which(self.binary) is not None

    def env(self):
        return {}

    def prepare(self, round_dir):
        pass

    def backup_cmd(self, phase):
        raise NotImplementedError

    def after_backup(self, phase, stdout):
        pass

    def restore_cmd(self, target):
        raise NotImplementedError

    def restore_cwd(self, target):
        return None

    def restore_one_cmd(self, target, relative):
        raise NotImplementedError

    def verify_cmd(self):
        raise NotImplementedError

    def stored(self):
        return tree_size(self.repo)


class Keepsake(Tool):
    name = "keepsake"
    cold = True
    label = {"full": "keepsake backup", "nochange": "keepsake backup (incremental)",
             "changed": "keepsake backup (incremental)", "restore": "keepsake restore",
             "one": "keepsake restore ID PATH", "verify": "keepsake verify"}

    def prepare(self, round_dir):
        self.repo = os.path.join(round_dir, "keepsake")
        self.full_id, self.archive = None, None

    def backup_cmd(self, phase):
        return [self.bench.keepsake, "backup", "--json", "-d", self.repo, self.bench.data.root]

    def after_backup(self, phase, stdout):
        doc = json.loads(stdout)
        if phase == "full":
            self.full_id = doc["id"]
            self.archive = os.path.join(doc["destination"], doc["archive"])
        elif doc.get("kind") != "incremental":
            self.bench.note(f"keepsake's {phase} backup was {doc.get('kind', 'not incremental')}, not incremental")

    def restore_cmd(self, target):
        return [self.bench.keepsake, "restore", "-q", "-d", self.repo, self.full_id, "-C", target]

    def restore_one_cmd(self, target, relative):
        return [self.bench.keepsake, "restore", "-q", "-d", self.repo, self.full_id,
                os.path.join(self.bench.data.root, relative), "-C", target]

    def verify_cmd(self):
        return [self.bench.keepsake, "verify", "-q", "-d", self.repo, self.full_id]


class TarZstd(Tool):
    name = "tar-zstd"
    binary = "zstd"
    needs = ("zstd",)
    incremental = False
    cold = True
    label = {"full": "tar -I 'zstd -T0 -3' -cf", "restore": "tar -xf (the .tar.zst)", "one": "tar -xf ARCHIVE PATH (.tar.zst)"}

    def prepare(self, round_dir):
        self.repo = os.path.join(round_dir, "tar.tar.zst")

    def backup_cmd(self, phase):
        d = self.bench.data
        return ["tar", "-I", "zstd -T0 -3", "-cf", self.repo, "-C", d.parent, d.name]

    def restore_cmd(self, target):
        return ["tar", "-xf", self.repo, "-C", target]

    def restore_one_cmd(self, target, relative):
        return ["tar", "-xf", self.repo, "-C", target, os.path.join(self.bench.data.name, relative)]


class TarGzip(Tool):
    name = "tar-gzip"
    binary = "gzip"
    incremental = False
    label = {"full": "tar -czf", "restore": "tar -xf (the .tar.gz)"}

    def prepare(self, round_dir):
        self.repo = os.path.join(round_dir, "tar.tar.gz")

    def backup_cmd(self, phase):
        return ["tar", "-czf", self.repo, "-C", self.bench.data.parent, self.bench.data.name]

    def restore_cmd(self, target):
        return ["tar", "-xf", self.repo, "-C", target]


class TarPigz(Tool):
    """gzip on every core: the same .tar.gz format as tar -czf."""
    name = "tar-pigz"
    binary = "pigz"
    needs = ("pigz",)
    incremental = False
    label = {"full": "tar -I pigz -cf", "restore": "tar -I pigz -xf (the .tar.gz)"}

    def prepare(self, round_dir):
        self.repo = os.path.join(round_dir, "tar-pigz.tar.gz")

    def backup_cmd(self, phase):
        return ["tar", "-I", "pigz", "-cf", self.repo, "-C", self.bench.data.parent, self.bench.data.name]

    def restore_cmd(self, target):
        return ["tar", "-I", "pigz", "-xf", self.repo, "-C", target]


class ZstdRead(Tool):
    """Verify peer: a full read of Keepsake's own archive."""
    name = "zstd-read"
    binary = "zstd"
    needs = ("zstd",)
    label = {"verify": "zstd -dc ARCHIVE | sha256sum (Keepsake's archive)"}

    def verify_cmd(self):
        ks = self.bench.tool("keepsake")
        if not ks or not ks.archive:
            raise Failed("needs keepsake's archive (keepsake's backup did not run)")
        return ["bash", "-c", 'set -o pipefail; zstd -dc -- "$1" | sha256sum >/dev/null', "bench", ks.archive]

    def stored(self):
        return None


class Restic(Tool):
    name = "restic"
    binary = "restic"
    needs = ("restic",)
    cold = True
    label = {"full": "restic backup", "nochange": "restic backup (parent)", "changed": "restic backup (parent)",
             "restore": "restic restore", "one": "restic restore --include PATH", "verify": "restic check --read-data"}

    def env(self):
        # Only for restic's own commands; never on a command line.
        return {"RESTIC_PASSWORD": "keepsake-bench", "RESTIC_CACHE_DIR": self.cache}

    def prepare(self, round_dir):
        self.repo = os.path.join(round_dir, "restic")
        self.cache = os.path.join(round_dir, "restic-cache")
        subprocess.run(["restic", "-r", self.repo, "init", "-q"], env={**os.environ, **self.env()},
                       check=True, stdout=subprocess.DEVNULL)

    def backup_cmd(self, phase):
        return ["restic", "-r", self.repo, "backup", "-q", self.bench.data.root]

    def restore_cmd(self, target):
        return ["restic", "-r", self.repo, "restore", "-q", "latest", "--target", target]

    def restore_one_cmd(self, target, relative):
        return ["restic", "-r", self.repo, "restore", "-q", "latest", "--target", target,
                "--include", os.path.join(self.bench.data.root, relative)]

    def verify_cmd(self):
        return ["restic", "-r", self.repo, "check", "-q", "--read-data"]


class Borg(Tool):
    binary = "borg"
    needs = ("borg",)
    cold = True

    def __init__(self, bench, compression):
        super().__init__(bench)
        self.compression = compression
        self.name = "borg-lz4" if compression is None else "borg-" + compression.replace(",", "")
        c = "" if compression is None else f" --compression {compression}"
        d = " (default lz4)" if compression is None else ""
        self.label = {"full": f"borg create{c}{d}", "nochange": f"borg create{c} (files cache)",
                      "changed": f"borg create{c} (files cache)", "restore": f"borg extract ({self.name[5:]})",
                      "one": f"borg extract ARCHIVE PATH ({self.name[5:]})",
                      "verify": f"borg check --verify-data ({self.name[5:]})"}

    def env(self):
        return {"BORG_PASSPHRASE": "", "BORG_BASE_DIR": self.base_dir,
                "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK": "yes", "BORG_RELOCATED_REPO_ACCESS_IS_OK": "yes"}

    def prepare(self, round_dir):
        self.repo = os.path.join(round_dir, self.name)
        self.base_dir = os.path.join(round_dir, self.name + "-home")
        self.archives = 0
        subprocess.run(["borg", "init", "--encryption", "none", self.repo], env={**os.environ, **self.env()},
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def backup_cmd(self, phase):
        c = ["--compression", self.compression] if self.compression else []
        return ["borg", "create"] + c + [f"{self.repo}::{phase}", self.bench.data.root]

    def restore_cmd(self, target):
        return ["borg", "extract", f"{self.repo}::full"]  # the cold rows' repositories hold their own "full"

    def restore_cwd(self, target):
        return target

    def restore_one_cmd(self, target, relative):
        return ["borg", "extract", f"{self.repo}::full", os.path.join(self.bench.data.root, relative).lstrip("/")]

    def verify_cmd(self):
        return ["borg", "check", "--verify-data", self.repo]


class S3Tool:
    """Mixin for the rows on the bench's SeaweedFS: each round gets a fresh prefix."""
    s3 = True
    cold = False

    def s3_env(self):
        server = self.bench.s3_server
        # Only in these commands' environment; never on a command line.
        return {"AWS_ACCESS_KEY_ID": server.access_key, "AWS_SECRET_ACCESS_KEY": server.secret_key,
                "AWS_SESSION_TOKEN": None, "AWS_PROFILE": None, "AWS_DEFAULT_PROFILE": None,
                "http_proxy": None, "HTTP_PROXY": None, "https_proxy": None, "HTTPS_PROXY": None,
                "all_proxy": None, "ALL_PROXY": None}

    def fresh_prefix(self, round_dir):
        self.prefix = f"{os.path.basename(round_dir)}/{self.name}"
        return self.prefix

    def stored(self):
        return self.bench.s3_server.stored(self.prefix)


class KeepsakeS3(S3Tool, Keepsake):
    name = "keepsake-s3"
    label = {"full": "keepsake backup -d s3://… (SeaweedFS)", "restore": "keepsake restore -d s3://… (SeaweedFS)",
             "one": "keepsake restore -d s3://… ID PATH (SeaweedFS)"}

    def env(self):
        return {**self.s3_env(), "KEEPSAKE_S3_ENDPOINT": self.bench.s3_server.endpoint}

    def prepare(self, round_dir):
        self.repo = f"s3://{self.bench.s3_server.bucket}/{self.fresh_prefix(round_dir)}"
        self.full_id, self.archive = None, None


class ResticS3(S3Tool, Restic):
    name = "restic-s3"
    label = {"full": "restic backup, s3: backend (SeaweedFS)", "restore": "restic restore, s3: backend (SeaweedFS)"}

    def env(self):
        return {**self.s3_env(), **Restic.env(self)}

    def prepare(self, round_dir):
        server = self.bench.s3_server
        self.repo = f"s3:{server.endpoint}/{server.bucket}/{self.fresh_prefix(round_dir)}"
        self.cache = os.path.join(round_dir, "restic-s3-cache")
        r = subprocess.run(["restic", "-r", self.repo, "init", "-q"], env=command_env(self.env()), stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise OSError(f"restic init on S3: exit {r.returncode}: {' / '.join(r.stderr.strip().splitlines())[-200:]}")


class EncryptedKeepsake(Keepsake):
    """Mixin base of the encryption rows: keepsake into a folder of its own, encrypted with age.
    Each run's change-detection cache ($XDG_CACHE_HOME/keepsake) lives in the round's folder
    under the work folder, never in ~/.cache; the keys live in WORK/runs/keys for the whole bench."""
    encrypted = True
    cold = False
    needs = ("age",)  # only for the round-0 check that `age -d` opens keepsake's encrypted archive
    follows = "keepsake"  # runs right after the plain keepsake row: plain, encrypted, plain, encrypted…

    def env(self):
        # The bench's own flags say how to encrypt and open; the caller's settings stay out.
        return {"XDG_CACHE_HOME": self.cache, "KEEPSAKE_IDENTITY_FILE": None, "KEEPSAKE_PASSPHRASE_FILE": None}

    def prepare(self, round_dir):
        super().prepare(round_dir)
        self.repo = os.path.join(round_dir, self.name)
        self.cache = os.path.join(round_dir, self.name + "-cache")
        self.keys = os.path.join(os.path.dirname(round_dir), "keys")
        os.makedirs(self.keys, mode=0o700, exist_ok=True)
        self.make_key()

    def make_key(self):
        raise NotImplementedError

    def key_options(self, opening):
        raise NotImplementedError

    def backup_cmd(self, phase):
        return [self.bench.keepsake, "backup", "--json", "-d", self.repo] + self.key_options(False) + [self.bench.data.root]

    def restore_cmd(self, target):
        return [self.bench.keepsake, "restore", "-q", "-d", self.repo] + self.key_options(True) + [self.full_id, "-C", target]

    def restore_one_cmd(self, target, relative):
        return ([self.bench.keepsake, "restore", "-q", "-d", self.repo] + self.key_options(True)
                + [self.full_id, os.path.join(self.bench.data.root, relative), "-C", target])


class KeepsakeAge(EncryptedKeepsake):
    name = "keepsake-age"
    label = {"full": "keepsake backup --recipient age1… (X25519)", "restore": "keepsake restore --identity FILE",
             "one": "keepsake restore --identity FILE ID PATH"}

    def make_key(self):
        self.identity = os.path.join(self.keys, "identity.txt")
        public = os.path.join(self.keys, "identity.pub")
        if not os.path.exists(public):
            r = subprocess.run([self.bench.keepsake, "keygen", "--no-input", "--output", self.identity],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            key = r.stdout.strip()
            if r.returncode != 0 or not key.startswith("age1"):
                raise OSError(f"keepsake keygen: exit {r.returncode}: {' / '.join(r.stderr.strip().splitlines())[-200:]}")
            with open(public, "w") as f:
                f.write(key + "\n")
        with open(public) as f:
            self.recipient = f.read().strip()

    def key_options(self, opening):
        return ["--identity", self.identity] if opening else ["--recipient", self.recipient]

    def check_with_age(self):
        """Once (round 0): the encrypted archive is a standard age file that age -d opens and
        whose content zstd -t accepts. A failure is a note, not a timing."""
        if not have_command("age") or not self.archive:
            return
        r = subprocess.run(["bash", "-c", 'set -o pipefail; age -d -i "$1" -- "$2" | zstd -q -t', "bench",
                            self.identity, self.archive], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.bench.age_check = "ok" if r.returncode == 0 else \
            f"failed (exit {r.returncode}: {' / '.join(r.stderr.strip().splitlines())[-200:]})"
        if r.returncode != 0:
            self.bench.note(f"age -d | zstd -t did not accept keepsake's encrypted archive: {self.bench.age_check}")


class KeepsakePassphrase(EncryptedKeepsake):
    name = "keepsake-pass"
    label = {"full": "keepsake backup --passphrase-file FILE (scrypt)"}

    def make_key(self):
        self.passphrase_file = os.path.join(self.keys, "passphrase")
        if not os.path.exists(self.passphrase_file):
            fd = os.open(self.passphrase_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_urlsafe(24) + "\n")

    def key_options(self, opening):
        return ["--passphrase-file", self.passphrase_file]


class ResticPeer(Restic):
    """restic for the encryption rows when --tools leaves it out: its full backup and restore
    only, run the same way as the restic row (restic always encrypts)."""
    label = {"full": "restic backup", "restore": "restic restore"}
    cold = False


class KeepsakeVariant(Keepsake):
    """--variant NAME:SPEC: keepsake again with extra environment variables and/or arguments, in a
    folder of its own, right after the plain keepsake row in the same rounds (plain, variant…)."""
    follows = "keepsake"

    def __init__(self, bench, variant):
        super().__init__(bench)
        self.variant = variant
        self.name = f"keepsake[{variant['name']}]"
        self.label = {phase: f"{label} [{variant['name']}]" for phase, label in Keepsake.label.items()}

    def env(self):
        return dict(self.variant["env"])

    @property
    def executable(self):
        """The variant's own binary (`binary PATH`), else the one the bench built."""
        return self.variant.get("binary") or self.bench.keepsake

    def prepare(self, round_dir):
        super().prepare(round_dir)
        self.repo = os.path.join(round_dir, f"keepsake-variant-{self.variant['name']}")

    def backup_cmd(self, phase):
        return ([self.executable, "backup", "--json", "-d", self.repo] + self.variant["args"]["backup"]
                + [self.bench.data.root])

    def restore_cmd(self, target):
        return ([self.executable, "restore", "-q", "-d", self.repo] + self.variant["args"]["restore"]
                + [self.full_id, "-C", target])

    def restore_one_cmd(self, target, relative):
        return ([self.executable, "restore", "-q", "-d", self.repo] + self.variant["args"]["restore"]
                + [self.full_id, os.path.join(self.bench.data.root, relative), "-C", target])

    def verify_cmd(self):
        return [self.executable, "verify", "-q", "-d", self.repo] + self.variant["args"]["verify"] + [self.full_id]
