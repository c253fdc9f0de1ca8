# A TCP server for test_symbolize that accepts connections and never answers:
# a debuginfod that hangs. Prints its port, and exits when its parent is gone
# (stdin closes) or after 300 s.
import socket, sys, select, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
end = time.time() + 300
while time.time() < end:
    r, _, _ = select.select([s, sys.stdin], [], [], 1)
    if sys.stdin in r and not sys.stdin.read(1):
        break
    if s in r:
        c, _ = s.accept()
        held.append(c)
