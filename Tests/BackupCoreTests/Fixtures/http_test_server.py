# A loopback HTTP/1.1 server for HTTPClientTests: it writes its port to argv[1] and exits
# when its parent (the test process) goes away.
import hashlib, http.server, os, sys, threading, time

PATTERN = bytes(i % 251 for i in range(251 * 1024))  # byte i of any body is i % 251


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without TCP_NODELAY, each response would
    # wait 40 ms for the client's delayed ACK.
    disable_nagle_algorithm = True
    served = 0  # requests on this connection so far

    def log_message(self, *args):
        pass

    def do_GET(self):
        try:
            self.route()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def read_body(self):
        length = int(self.headers.get("Content-Length", "0"))
        data = bytearray()
        while len(data) < length:
            piece = self.rfile.read(length - len(data))
            if not piece:
                break
            data += piece
        return bytes(data)

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def pattern(self, count, chunked=False):
        sent = 0
        while sent < count:
            piece = PATTERN[: min(len(PATTERN), count - sent)]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            sent += len(piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def route(self):
        self.served += 1
        path, _, query = self.path.partition("?")
        params = dict(pair.split("=", 1) for pair in query.split("&") if "=" in pair)
        body = self.read_body()
        if path == "/fresh-only" and self.served > 1:
            # Hangs up on a reused connection without answering, as a server closing an idle
            # connection just as a request arrives does.
            self.close_connection = True
            return
        if path == "/hello":
            self.reply(200, b"hello, world", [("X-Custom-Thing", "Some Value"), ("x-lower", "lower")])
        elif path == "/bytes":
            count = int(params["n"])
            self.send_response(200)
            self.send_header("Content-Length", str(count))
            self.end_headers()
            if self.command != "HEAD":
                self.pattern(count)
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.pattern(int(params["n"]), chunked=True)
        elif path in ("/sha256", "/fresh-only"):
            self.reply(200, hashlib.sha256(body).hexdigest().encode(), [
                ("X-Method", self.command),
                ("X-Received-Length", self.headers.get("Content-Length", "none")),
                ("X-Saw-Expect", self.headers.get("Expect", "none")),
                ("X-Saw-Content-Type", self.headers.get("Content-Type", "none")),
            ])
        elif path == "/headers":
            self.reply(200, "".join("%s: %s\n" % pair for pair in self.headers.items()).encode())
        elif path == "/method":
            self.reply(200, ("%s %d" % (self.command, len(body))).encode())
        elif path == "/status":
            code = int(params["code"])
            self.reply(code, ("status %d body." % code).encode() * int(params.get("repeat", "1")))
        elif path == "/interim":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n")
            self.reply(201, b"created", [("X-Final", "yes")])
        elif path == "/stall":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 100)
            time.sleep(120)
        elif path == "/drop":
            self.send_response(200)
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"x" * 100)
            self.close_connection = True
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", str(1200 * 1024))
            self.end_headers()
            for _ in range(1200):
                self.wfile.write(b"s" * 1024)
                time.sleep(0.05)
        elif path == "/port":
            self.reply(200, str(self.client_address[1]).encode())
        else:
            self.reply(404, b"no such path")


for method in ("HEAD", "PUT", "POST", "DELETE"):
    setattr(Handler, "do_" + method, Handler.do_GET)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def watch_parent(parent):
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


server = Server(("127.0.0.1", 0), Handler)
with open(sys.argv[1] + ".tmp", "w") as file:
    file.write(str(server.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
server.serve_forever()
