import json,urllib.request,time,sys
api=sys.argv[1]; prefix=sys.argv[2]; n=int(sys.argv[3]); gfile=sys.argv[4]
g=json.load(open(gfile))
def post(path,body):
    while True:
        req=urllib.request.Request(api+path,data=json.dumps(body).encode(),headers={"Content-Type":"application/json"})
        try: return urllib.request.urlopen(req).status
        except urllib.error.HTTPError as e:
            if e.code in (429,503): time.sleep(float(e.headers.get('Retry-After','1') or 1)); continue
            return (e.code, e.read()[:300])
t=time.time()
for i in range(n):
    a=post("/scenarios",{"name":f"{prefix}{i}","graph":g})
    b=post(f"/scenarios/{prefix}{i}/deploy",{})
    if b!=200: print(i,a,b); break
print("done",i+1,time.time()-t)
