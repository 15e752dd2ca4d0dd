// y = 2x + y on a gpuhttpd server with Node's fetch: upload, run, download, check.
// usage: node axpy.mjs [http://127.0.0.1:8080]   (GPUHTTPD_TOKEN: a bearer token)
const base = process.argv[2] ?? "http://127.0.0.1:8080";
const auth = process.env.GPUHTTPD_TOKEN ? { Authorization: `Bearer ${process.env.GPUHTTPD_TOKEN}` } : {};
async function call(method, path, body, type = "application/json") {
  const r = await fetch(base + path, { method, body, headers: { ...auth, "Content-Type": type } });
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r;
}
const n = 1000, x = Float32Array.from({ length: n }, (_, i) => i), y = new Float32Array(n).fill(1);
// One request per array: its raw bytes, described by ?dtype= and ?shape=.
const upload = async (a) =>
  (await (await call("POST", `/v1/buffers?dtype=f32&shape=${n}`, a, "application/octet-stream")).json()).id;
const X = await upload(x), Y = await upload(y);
await call("POST", "/v1/runs", JSON.stringify({ kernel: "axpy", args: { a: 2, x: X, y: Y } }));
const out = new Float32Array(await (await call("GET", `/v1/buffers/${Y}`)).arrayBuffer());
for (let i = 0; i < n; i++) if (out[i] !== 2 * i + 1) throw new Error(`y[${i}] is ${out[i]}, not ${2 * i + 1}`);
for (const id of [X, Y]) await call("DELETE", `/v1/buffers/${id}`);
console.log(`axpy ok: y[${n - 1}] = ${out[n - 1]}`);
