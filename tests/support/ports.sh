#!/usr/bin/env bash
# ports.sh: pd_free_port prints a loopback TCP port that nothing is bound to, for a
# server a test must give a fixed port (clickhouse-server, debuginfod, profd behind a
# config that names its address). It picks below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range, 32768- by default): a port the kernel handed out by
# bind(0) is one it may hand out again at once to any outgoing connection of another
# test running beside this one, and the server started on it then fails with
# "Address already in use". Source it.

pd_free_port() {
	python3 - <<'PY'
import random, socket
lo = 32768
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    pass
top = min(lo, 65536) - 1
for _ in range(200):
    p = random.randint(max(1024, top - 12000), top)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        s.close()
    print(p)
    break
else:
    raise SystemExit("pd_free_port: no free loopback port below the ephemeral range")
PY
}
