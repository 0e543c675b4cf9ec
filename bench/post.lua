-- wrk script: POST the JSON body found in the file named by $BENCH_BODY
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("BENCH_BODY"), "r"))
wrk.body = f:read("*a")
f:close()
