"""SeaweedFS (`weed mini`) on 127.0.0.1: the S3 server of the S3 rows."""

import datetime
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import urllib.parse
import xml.etree.ElementTree as ElementTree

from .common import Failed, ROOT


GRPC_OFFSET = 10000  # weed mini's admin worker dials the admin server at its HTTP port + 10000


def find_weed(explicit=None):
    """The weed binary: --weed, else $KEEPSAKE_WEED, else .build/seaweedfs/bin/weed in the
    repository (where Scripts/test-servers installs it), else `weed` on PATH. Returns
    (path or None, where it was looked for)."""
    if explicit:
        return (explicit if os.access(explicit, os.X_OK) else None), explicit
    env = os.environ.get("KEEPSAKE_WEED")
    if env:
        return (env if os.access(env, os.X_OK) else None), f"KEEPSAKE_WEED={env}"
    local = os.path.join(ROOT, ".build", "seaweedfs", "bin", "weed")
    if os.access(local, os.X_OK):
        return local, local
    on_path = shutil.which("weed")
    return on_path, f"{local} or weed on PATH"


def free_port_pairs(count):
    """`count` pairs (p, p + GRPC_OFFSET) of TCP ports free on 127.0.0.1, all different."""
    pairs, taken = [], set()
    for _ in range(200):
        if len(pairs) == count:
            return pairs
        with socket.socket() as a:
            a.bind(("127.0.0.1", 0))
            port = a.getsockname()[1]
            if port + GRPC_OFFSET > 65535 or {port, port + GRPC_OFFSET} & taken:
                continue
            with socket.socket() as b:
                try:
                    b.bind(("127.0.0.1", port + GRPC_OFFSET))
                except OSError:
                    continue
        pairs.append((port, port + GRPC_OFFSET))
        taken |= {port, port + GRPC_OFFSET}
    raise Failed(f"could not find {count} pairs of free ports on 127.0.0.1")


def _set_parent_death_signal():
    # In the child before exec: SIGTERM weed should the bench die without its finally
    # (SIGKILL); a new session keeps the terminal's Ctrl-C for the bench, which stops weed.
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class SeaweedFS:
    """`weed mini` (master, volume server, filer, S3 gateway, admin in one process) bound to
    127.0.0.1 on free ports, with one bucket and one identity whose random keys only the S3
    rows' commands get (in their environment). Without an identity SeaweedFS refuses
    restic's streaming-signed uploads ("Signed request requires setting up SeaweedFS S3
    authentication")."""

    bucket = "keepsake-bench"
    region = "us-east-1"

    def __init__(self, weed, base, log_path):
        self.weed, self.base, self.log_path = weed, base, log_path
        self.proc, self.ports = None, None
        self.access_key = "KSBENCH" + secrets.token_hex(8).upper()
        self.secret_key = secrets.token_urlsafe(30)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.ports['s3']}"

    def version(self):
        try:
            r = subprocess.run([self.weed, "version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, timeout=20, env=self._env(tempfile.gettempdir()))
            # "version 8000GB 4.48 pypi linux amd64"
            line = next((l.strip() for l in r.stdout.splitlines() if l.startswith("version")), "")
            m = re.search(r"\b(\d+\.\d+(?:\.\d+)?)\b", line)
            return f"SeaweedFS {m.group(1)}" if m else (line or None)
        except (OSError, subprocess.TimeoutExpired):
            return None

    @staticmethod
    def _env(home):
        # No AWS_*, S3_* or WEED_* (weed mini makes identities of AWS_ACCESS_KEY_ID, WEED_*
        # override its configuration), no proxies; HOME (~/.seaweedfs/*.toml) and TMPDIR (its
        # weed.* log files) in its own folder.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "S3_", "WEED_")) and "proxy" not in k.lower()}
        env["HOME"] = home
        env["TMPDIR"] = home
        return env

    def start(self, timeout=90):
        os.makedirs(self.base)
        data = os.path.join(self.base, "data")
        home = os.path.join(self.base, "home")
        os.makedirs(data)
        os.makedirs(home)
        identities = os.path.join(self.base, "s3-identities.json")
        fd = os.open(identities, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"identities": [{"name": "bench", "credentials": [
                {"accessKey": self.access_key, "secretKey": self.secret_key}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}, f)
        names = ("master", "volume", "filer", "s3", "admin")
        pairs = free_port_pairs(len(names))
        self.ports = {name: http_port for name, (http_port, _) in zip(names, pairs)}
        self.all_ports = [port for pair in pairs for port in pair]
        argv = [self.weed, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                "-master.telemetry=false", "-admin.ui=false", "-webdav=false",
                "-s3.port.iceberg=0", "-s3.port.lance=0", f"-s3.config={identities}",
                f"-filer.localSocket={self.base}/filer.sock", f"-s3.localSocket={self.base}/s3.sock",
                f"-bucket={self.bucket}"]
        for name, (http_port, grpc_port) in zip(names, pairs):
            argv += [f"-{name}.port={http_port}", f"-{name}.port.grpc={grpc_port}"]
        with open(self.log_path, "wb") as log_file:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                                         env=self._env(home), cwd=self.base, start_new_session=True,
                                         preexec_fn=_set_parent_death_signal)
        started = time.perf_counter()
        last = "no answer yet"
        while True:
            if self.proc.poll() is not None:
                raise Failed(f"weed mini exited with {self.proc.returncode}: {self.log_tail()}")
            if time.perf_counter() - started > timeout:
                raise Failed(f"weed mini did not accept an S3 write within {timeout} s ({last}): {self.log_tail()}")
            try:
                # A write through the S3 gateway (the volume can grow) proves the whole chain.
                status, body = self.request("PUT", ".bench-probe", body=b"ready")
                if status == 200:
                    self.request("DELETE", ".bench-probe")
                    self.ready_seconds = time.perf_counter() - started
                    return
                last = f"HTTP {status} {body[:160].decode(errors='replace')}"
            except OSError as e:
                last = str(e)
            time.sleep(0.25)

    def log_tail(self):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read()[-600:].decode(errors="replace")
        except OSError:
            return "(no log)"
        return " / ".join(text.replace(self.secret_key, "***").strip().splitlines())[-400:]

    def cpu_seconds(self):
        """user + sys of the weed process so far (from /proc), or None."""
        if not self.proc or self.proc.poll() is not None:
            return None
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def stop(self):
        """SIGTERM, up to 15 s to exit, then SIGKILL; waits for the pid; removes the gRPC
        sockets weed leaves in /tmp when it is killed. Idempotent."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for service in ("master", "volume", "filer", "s3", "admin"):
            for port in getattr(self, "all_ports", ()):
                path = f"/tmp/seaweedfs-{service}-grpc-{port}.sock"
                try:
                    if stat.S_ISSOCK(os.lstat(path).st_mode):
                        os.unlink(path)
                except OSError:
                    pass

    # -- S3 requests (AWS Signature V4, path style) -----------------------------------------
    def request(self, method, key="", query=None, body=b""):
        path = "/" + self.bucket + ("/" + urllib.parse.quote(key, safe="/-_.~") if key else "/")
        q = sorted((urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                   for k, v in (query or {}).items())
        canonical_query = "&".join(f"{k}={v}" for k, v in q)
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload = hashlib.sha256(body).hexdigest()
        headers = {"host": f"127.0.0.1:{self.ports['s3']}", "x-amz-content-sha256": payload, "x-amz-date": amz_date}
        signed = ";".join(sorted(headers))
        canonical = "\n".join([method, path, canonical_query,
                               "".join(f"{k}:{headers[k]}\n" for k in sorted(headers)), signed, payload])
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = ("AWS4" + self.secret_key).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                                    f"SignedHeaders={signed}, Signature={signature}")
        conn = http.client.HTTPConnection("127.0.0.1", self.ports["s3"], timeout=30)
        try:
            conn.request(method, path + ("?" + canonical_query if canonical_query else ""), body=body or None,
                         headers=headers)
            answer = conn.getresponse()
            return answer.status, answer.read()
        finally:
            conn.close()

    def stored(self, prefix):
        """Bytes of the objects under prefix/ (ListObjectsV2, every page)."""
        total, token = 0, None
        while True:
            query = {"list-type": "2", "prefix": prefix.rstrip("/") + "/"}
            if token:
                query["continuation-token"] = token
            try:
                status, body = self.request("GET", query=query)
            except OSError as e:
                raise Failed(f"listing s3://{self.bucket}/{prefix}: {e}")
            if status != 200:
                raise Failed(f"listing s3://{self.bucket}/{prefix}: HTTP {status}")
            doc = ElementTree.fromstring(body)
            for el in doc.iter():
                if el.tag.endswith("}Size") or el.tag == "Size":
                    total += int(el.text)
            token = next((el.text for el in doc.iter() if el.tag.endswith("NextContinuationToken")), None)
            truncated = next((el.text for el in doc.iter() if el.tag.endswith("IsTruncated")), "false")
            if truncated != "true" or not token:
                return total
