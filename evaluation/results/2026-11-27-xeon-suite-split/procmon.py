"""Poll /proc; record per process (pid, start time) its command line and CPU ticks; write JSON at SIGTERM."""
import json, os, signal, sys, time
out = sys.argv[1]
seen = {}
tck = os.sysconf("SC_CLK_TCK")
running = True
def stop(*_):
    global running
    running = False
signal.signal(signal.SIGTERM, stop)
me = os.getpid()
t0 = time.time()
while running:
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
            fields = stat[stat.rfind(")") + 2:].split()
            ticks = int(fields[11]) + int(fields[12])
            start = int(fields[19])
            key = f"{name}:{start}"
            entry = seen.get(key)
            if entry is None:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:300]
                entry = seen[key] = {"pid": int(name), "ppid": int(fields[1]), "cmd": cmd, "first": time.time() - t0}
            entry["cpu"] = ticks / tck
            entry["last"] = time.time() - t0
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            pass
    time.sleep(0.25)
json.dump(list(seen.values()), open(out, "w"))
