// y = 2x + y on a gpuhttpd server with Go's net/http: upload, run, download, check.
// usage: go run axpy.go [http://127.0.0.1:8080]   (GPUHTTPD_TOKEN: a bearer token)
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
)

var base = "http://127.0.0.1:8080"

func call(method, path, ctype string, body []byte) []byte {
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", ctype)
	if t := os.Getenv("GPUHTTPD_TOKEN"); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode >= 300 {
		panic(fmt.Sprintf("%s %s: %d %s %v", method, path, resp.StatusCode, out, err))
	}
	return out
}

// One request per array: its raw bytes, described by ?dtype= and ?shape=.
func upload(a []float32) string {
	var raw bytes.Buffer
	binary.Write(&raw, binary.LittleEndian, a)
	var made struct{ ID string }
	path := fmt.Sprintf("/v1/buffers?dtype=f32&shape=%d", len(a))
	json.Unmarshal(call("POST", path, "application/octet-stream", raw.Bytes()), &made)
	return made.ID
}

func main() {
	if len(os.Args) > 1 {
		base = os.Args[1]
	}
	n := 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), 1
	}
	X, Y := upload(x), upload(y)
	run, _ := json.Marshal(map[string]any{"kernel": "axpy", "args": map[string]any{"a": 2, "x": X, "y": Y}})
	call("POST", "/v1/runs", "application/json", run)
	out := make([]float32, n)
	binary.Read(bytes.NewReader(call("GET", "/v1/buffers/"+Y, "", nil)), binary.LittleEndian, out)
	for i, v := range out {
		if v != 2*float32(i)+1 {
			panic(fmt.Sprintf("y[%d] is %g, not %d", i, v, 2*i+1))
		}
	}
	call("DELETE", "/v1/buffers/"+X, "", nil)
	call("DELETE", "/v1/buffers/"+Y, "", nil)
	fmt.Printf("axpy ok: y[%d] = %g\n", n-1, out[n-1])
}
