# A TCP server for the symbolizer's tests that accepts connections and never
# answers: a debuginfod that hangs. Prints its port; exits when its parent is
# gone or after 300 s.
import os, select, socket, time
parent = os.getppid()
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
print(s.getsockname()[1], flush=True)
held = []
end = time.time() + 300
while time.time() < end and os.getppid() == parent:
    r, _, _ = select.select([s], [], [], 0.5)
    if r:
        c, _ = s.accept()
        held.append(c)
