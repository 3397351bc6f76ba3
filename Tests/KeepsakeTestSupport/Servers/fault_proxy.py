#!/usr/bin/env python3
# The fault proxy of Keepsake's tests (Tests/KeepsakeTestSupport/Servers/FaultProxy.swift starts
# it): a real HTTP proxy on 127.0.0.1 in front of a test S3 server, which passes requests
# through until a test asks it to misbehave through GET /__fault__/COMMAND:
#   storm/N        answer the next N requests with 503 SlowDown
#   deny/N         answer the next N requests with 403 and terminal escapes in the message
#   truncate       cut the body of the next successful GET halfway and close the connection
#   endless        make listings never end (same token and markers), answer aborts here
#   unconditional  pass requests on without If-None-Match and If-Match
#   pass           behave again;  count: faults served;  aborted: uploads aborted while endless
# Usage: fault_proxy.py PORT UPSTREAM_PORT
import http.client, socketserver, sys, threading, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, upstream = int(sys.argv[1]), int(sys.argv[2])
state = {"storm": 0, "deny": 0, "truncate": False, "faults": 0, "endless": False, "aborted": [], "unconditional": False}
lock = threading.Lock()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/__fault__/"):
            command = self.path[len("/__fault__/"):]
            with lock:
                if command.startswith("storm/"):
                    state["storm"] = int(command[len("storm/"):])
                elif command.startswith("deny/"):
                    state["deny"] = int(command[len("deny/"):])
                elif command == "endless":
                    state["endless"] = True
                elif command == "unconditional":
                    state["unconditional"] = True
                elif command == "aborted":
                    return self.reply(200, "\n".join(state["aborted"]).encode())
                elif command == "truncate":
                    state["truncate"] = True
                elif command == "pass":
                    state["storm"], state["deny"], state["truncate"], state["endless"] = 0, 0, False, False
                    state["unconditional"] = False
                answer = str(state["faults"]).encode()
            return self.reply(200, answer)
        with lock:
            stormy = state["storm"] > 0
            if stormy:
                state["storm"] -= 1
                state["faults"] += 1
            denied = not stormy and state["deny"] > 0
            path, _, query = self.path.partition("?")
        fields = urllib.parse.parse_qs(query, keep_blank_values=True)
        if state["endless"] and self.command == "GET" and fields.get("list-type") == ["2"]:
            prefix = fields.get("prefix", [""])[0]
            document = ("<ListBucketResult><Contents><Key>%sjunk.bin</Key><Size>1</Size></Contents>"
                        "<IsTruncated>true</IsTruncated><NextContinuationToken>again</NextContinuationToken>"
                        "</ListBucketResult>" % prefix).encode()
            return self.reply(200, document, [("Content-Type", "application/xml")])
        if state["endless"] and self.command == "GET" and "uploads" in fields:
            prefix = fields.get("prefix", [""])[0]
            document = ("<ListMultipartUploadsResult>"
                        "<Upload><Key>%sweb1_20261206T020000Z-0000abcd.tar.zst</Key><UploadId>u1</UploadId></Upload>"
                        "<Upload><Key>%snot-keepsake.bin</Key><UploadId>u2</UploadId></Upload>"
                        "<IsTruncated>true</IsTruncated><NextKeyMarker>k</NextKeyMarker>"
                        "<NextUploadIdMarker>u</NextUploadIdMarker></ListMultipartUploadsResult>" % (prefix, prefix)).encode()
            return self.reply(200, document, [("Content-Type", "application/xml")])
        if state["endless"] and self.command == "DELETE" and "uploadId" in fields:
            with lock:
                state["aborted"].append(urllib.parse.unquote(path))
            return self.reply(204, b"")
        if denied:
                state["deny"] -= 1
                state["faults"] += 1
        if denied:
            document = (b"<Error><Code>AccessDenied</Code><Message>Access Denied\x1b]0;pwned\x07\x1b[2J\x1b[31m"
                        b"</Message></Error>")
            return self.reply(403, document, [("Content-Type", "application/xml")])
        if stormy:
            document = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
            return self.reply(503, document, [("Content-Type", "application/xml")])
        connection = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
        headers = {name: value for name, value in self.headers.items()
                   if not (state["unconditional"] and name.lower() in ("if-none-match", "if-match"))}
        connection.request(self.command, self.path, body=body if body or self.command in ("PUT", "POST") else None,
                           headers=headers)
        response = connection.getresponse()
        data = response.read() if self.command != "HEAD" else b""
        with lock:
            cut = state["truncate"] and self.command == "GET" and 200 <= response.status < 300 and len(data) > 1
            if cut:
                state["truncate"] = False
                state["faults"] += 1
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", response.getheader("Content-Length") or str(len(data)))
        self.end_headers()
        if cut:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(data)
        connection.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
