# SPDX-License-Identifier: Apache-2.0
import os, sys, time, subprocess, hashlib
sys.path.insert(0,"tests/lib")  # run from the repository root; sys.path.insert(0,"python"); sys.path.insert(0,"bench")
import wharf, benchlib
from cluster import Cluster
from wharfd import ACCESS_KEY, SECRET_KEY, REGION
cl = Cluster(storage=2, replicas=1, chunk_size=8<<20, providers="shm,tcp", log_level="warn"); cl.start()
try:
    g = cl.gateway
    c = wharf.Client(g.endpoint, ACCESS_KEY, SECRET_KEY, region=REGION, provider="ofi+shm", unix_socket=os.path.join(g.data_dir,"wharfd.sock"), concurrency=8, multipart_threshold=1<<40)
    c.create_bucket("bkt")
    data = bytearray(os.urandom(128<<20)); buf = bytearray(128<<20)
    for i in range(4): c.put_from("bkt", f"o{i}", data, transport="http")
    p = subprocess.Popen(["sleep","0"]) if os.environ.get("NOPERF") else subprocess.Popen(["perf","record","-g","-o","/tmp/gw.data","-p",str(g.proc.pid)], stderr=subprocess.DEVNULL)
    time.sleep(1)
    c0 = benchlib.proc_cpu_s(g.proc.pid); t0=time.time()
    for r in range(10):
        for i in range(4): c.get_into("bkt", f"o{i}", buf, transport="rdma")
    dt=time.time()-t0; gb=10*4*128*2**20/1e9
    print("gw cpu s/GB", (benchlib.proc_cpu_s(g.proc.pid)-c0)/gb, "GB/s", gb/dt)
    p.send_signal(2); p.wait()
finally:
    cl.cleanup()
