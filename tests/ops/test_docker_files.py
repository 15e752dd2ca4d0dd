#!/usr/bin/env python3
"""Checks of docker/ that need no Docker engine:
- the Dockerfile is multi-stage (CUDA 13.0 devel -> runtime, Ubuntu 24.04),
  copies the dependency scripts and installs from them before it copies the
  tree (a source change leaves that layer cached), builds with the README's
  cmake commands and the GHD_CUDA_ARCHITECTURES argument, runs as a non-root
  user, has the NVIDIA, GHD_BIND and GHD_PROBE_PORT environment and a
  HEALTHCHECK on /healthz that passes, run against the real server, both with
  TLS on GHD_PORT (it asks the plain-HTTP probe port) and without a probe
  port; .dockerignore keeps every build folder out;
- compose.yaml reserves a GPU and keeps the image's probe port; the
  Kubernetes StatefulSet limits nvidia.com/gpu and probes /healthz (startup,
  liveness) and /readyz (readiness) on the probe port, one Service (the
  headless one) selects its pods, kustomization.yaml lists the manifests
  (and `kubectl kustomize` renders them, where kubectl exists); the cluster
  around it (proxy, routing) is ops_k8s's;
- README.md, docker/README.md, the Dockerfile, compose and the StatefulSet
  name one image tag, gpuhttpd:<VERSION>;
- every GHD_* variable these files set is an option `gpuhttpd --help` lists.

usage: test_docker_files.py GPUHTTPD_BINARY REPO_ROOT"""
import fnmatch
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import Server, check, need_module  # noqa: E402

yaml = need_module("yaml", "pyyaml")


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def dockerfile_checks(path):
    text = read_text(path)
    # Join continuation lines so that each instruction is one line.
    lines = [ln.strip() for ln in re.sub(r"\\\n", " ", text).splitlines()]
    instr = [ln for ln in lines if ln and not ln.startswith("#")]
    args = dict(re.findall(r"^ARG (\w+)=(\S+)", "\n".join(instr), re.MULTILINE))
    froms = [ln for ln in instr if ln.startswith("FROM ")]
    check(len(froms) == 2, f"{path}: {len(froms)} stages, not 2")

    def expand(s):  # build arguments may name others (BUILD_IMAGE uses CUDA_VERSION)
        for _ in range(len(args) + 1):
            s = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), s)
        return s

    build_img = expand(froms[0].split()[1])
    run_img = expand(froms[1].split()[1])
    # Fully qualified: podman and CRI-O refuse short names.
    check(re.fullmatch(r"docker\.io/nvidia/cuda:13\.0\.\d+-devel-ubuntu24\.04", build_img),
          f"build stage image {build_img}")
    check(re.fullmatch(r"docker\.io/nvidia/cuda:13\.0\.\d+-runtime-ubuntu24\.04", run_img),
          f"runtime image {run_img}")
    check(froms[0].split()[-2:] == ["AS", "build"], "the build stage is not named 'build'")
    check(any(ln.startswith("COPY --from=build ") for ln in instr), "nothing is copied from build")
    run_all = " ".join(ln for ln in instr if ln.startswith("RUN "))
    check("cmake -S . -B build -DCMAKE_BUILD_TYPE=Release" in run_all and
          "cmake --build build -j" in run_all, "the build does not use the README's cmake commands")
    check("server/install-deps.sh" in run_all and "swagger-ui-bundle.js" in run_all,
          "the build does not install the start command's packages (and the /docs assets)")
    layer_order_checks(instr)
    check(re.search(r"^ARG GHD_CUDA_ARCHITECTURES\b", "\n".join(instr), re.MULTILINE) and
          "-DCMAKE_CUDA_ARCHITECTURES=${GHD_CUDA_ARCHITECTURES}" in run_all,
          "no GHD_CUDA_ARCHITECTURES build argument handed to CMake")
    users = [ln.split()[1] for ln in instr if ln.startswith("USER ")]
    check(users and users[-1].split(":")[0] not in ("0", "root"), f"runs as {users}")
    uid, _, gid = users[-1].partition(":")
    check(re.search(rf"useradd .*--uid {uid}\b", run_all), f"no useradd makes uid {uid}")
    check(not gid or re.search(rf"groupadd .*--gid {gid}\b", run_all),
          f"USER names group {gid}, which no groupadd makes")
    dockerignore_checks(os.path.join(os.path.dirname(os.path.dirname(path)), ".dockerignore"))
    health = [ln for ln in instr if ln.startswith("HEALTHCHECK ")]
    check(health and "/healthz" in health[0], "no HEALTHCHECK on /healthz")
    check(" CMD " in health[0], "the HEALTHCHECK has no CMD")
    env = {}
    for ln in instr:
        if ln.startswith("ENV "):
            env.update(dict(re.findall(r"(\w+)=(\S+)", ln[4:])))
    check(env.get("NVIDIA_DRIVER_CAPABILITIES") == "compute,utility",
          f"NVIDIA_DRIVER_CAPABILITIES={env.get('NVIDIA_DRIVER_CAPABILITIES')}")
    check(env.get("GHD_BIND") == "0.0.0.0", "GHD_BIND is not 0.0.0.0 in the image")
    probe = env.get("GHD_PROBE_PORT", "")
    check(probe.isdigit() and probe not in ("0", env.get("GHD_PORT")),
          f"the image's GHD_PROBE_PORT is {probe!r}: a port of its own is wanted for the "
          "HEALTHCHECK and the probes, which speak plain HTTP when GHD_PORT speaks TLS")
    exposed = " ".join(ln[len("EXPOSE "):] for ln in instr if ln.startswith("EXPOSE ")).split()
    check({env.get("GHD_PORT"), probe} <= set(exposed), f"EXPOSE {exposed}")
    check(any(ln.startswith("ENTRYPOINT ") and "gpuhttpd" in ln for ln in instr), "no ENTRYPOINT")
    return set(k for k in env if k.startswith("GHD_")), env, health[0].split(" CMD ", 1)[1]


def layer_order_checks(instr):
    """The dependency layer comes before `COPY . .`: from the scripts alone."""
    copy_all = [i for i, ln in enumerate(instr) if re.fullmatch(r"COPY \. \.?/?", ln)]
    deps = [i for i, ln in enumerate(instr)
            if ln.startswith("RUN ") and "server/install-deps.sh" in ln]
    check(copy_all and deps, "no COPY . . or no RUN of server/install-deps.sh")
    check(deps[0] < copy_all[0],
          "server/install-deps.sh runs after COPY . .: every source change reruns apt and "
          "the libmicrohttpd build")
    copied = " ".join(ln for ln in instr[:deps[0]] if ln.startswith("COPY "))
    for need in ("server/install-deps.sh", "server/mhd/"):
        check(need in copied, f"{need} is not copied before server/install-deps.sh runs")


def dockerignore_checks(path):
    check(os.path.exists(path), f"no {path}")
    patterns = [ln.strip() for ln in read_text(path).splitlines()
                if ln.strip() and not ln.startswith("#")]
    for folder in ("build", "build-host", "build-gpu", "build-tests", "build-debug", "build_cuda"):
        check(any(fnmatch.fnmatchcase(folder, p.rstrip("/")) for p in patterns),
              f".dockerignore does not keep {folder}/ out of COPY . .")
    check(any(p.rstrip("/") == ".git" for p in patterns), ".dockerignore does not keep .git out")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_healthcheck(cmd, env):
    """The HEALTHCHECK's CMD as the engine runs it (/bin/sh -c) with `env`."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
    return subprocess.run(["/bin/sh", "-c", cmd], env=full, capture_output=True, text=True,
                          timeout=30, check=False)


def healthcheck_live_checks(binary, image_env, cmd):
    """The HEALTHCHECK against the real binary, in the image's environment on
    loopback ports: with TLS on GHD_PORT it must pass through the probe port;
    with the probe port turned off (empty) and no TLS, through GHD_PORT."""
    if not shutil.which("curl") or not shutil.which("openssl"):
        print("test_docker_files: the live HEALTHCHECK checks need curl and openssl: not run")
        return
    env = {k: v for k, v in image_env.items() if k.startswith("GHD_")}
    env.update({"GHD_BIND": "127.0.0.1", "GHD_TOKENS": "hc-token:ops"})
    with tempfile.TemporaryDirectory(prefix="ghd-hc-") as d:
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=localhost"],
                       check=True, capture_output=True)
        cases = [("TLS on GHD_PORT", {"GHD_TLS_CERT": cert, "GHD_TLS_KEY": key,
                                      "GHD_PROBE_PORT": str(free_port())}),
                 ("no TLS, no probe port", {"GHD_PROBE_PORT": ""})]
        for name, extra in cases:
            case_env = {**env, **extra}
            with Server(binary, env=case_env) as srv:  # --port 0 wins over GHD_PORT
                case_env["GHD_PORT"] = str(srv.port)
                r = run_healthcheck(cmd, case_env)
                srv.stop()
            check(r.returncode == 0, f"the HEALTHCHECK fails with {name} (status "
                  f"{r.returncode}): {r.stderr.strip()}")


def compose_checks(path, image_env):
    doc = yaml.safe_load(read_text(path))
    svc = doc["services"]["gpuhttpd"]
    probe = str(svc.get("environment", {}).get("GHD_PROBE_PORT", image_env["GHD_PROBE_PORT"]))
    check(probe == image_env["GHD_PROBE_PORT"],
          f"compose moves the probe port to {probe}: the image's HEALTHCHECK follows it, but "
          "keep one value")
    devices = svc["deploy"]["resources"]["reservations"]["devices"]
    check(any("gpu" in d.get("capabilities", []) for d in devices), "compose reserves no GPU")
    ctx = os.path.join(os.path.dirname(path), svc["build"]["context"])
    check(os.path.isfile(os.path.join(ctx, svc["build"]["dockerfile"])),
          "compose's build context and dockerfile do not exist")
    return set(k for k in svc.get("environment", {}) if k.startswith("GHD_"))


def k8s_docs(folder):
    """The manifests, as `kubectl kustomize` renders them where kubectl exists
    (it resolves kustomization.yaml offline), else as kustomization.yaml
    lists them."""
    kust_path = os.path.join(folder, "kustomization.yaml")
    check(os.path.exists(kust_path), f"no {kust_path}: `kubectl apply -k` has nothing to read")
    kust = yaml.safe_load(read_text(kust_path))
    listed = set(kust.get("resources", []))
    files = {n for n in os.listdir(folder)
             if n.endswith((".yaml", ".yml")) and n != "kustomization.yaml"}
    check(listed == files, f"kustomization.yaml lists {sorted(listed)}, the folder has "
          f"{sorted(files)}")
    if shutil.which("kubectl"):
        r = subprocess.run(["kubectl", "kustomize", folder], capture_output=True, text=True,
                           timeout=60, check=False)
        check(r.returncode == 0, f"kubectl kustomize {folder}: {r.stderr.strip()}")
        return [d for d in yaml.safe_load_all(r.stdout) if d]
    docs = []
    for name in sorted(listed):
        docs += [d for d in yaml.safe_load_all(read_text(os.path.join(folder, name))) if d]
    return docs


def k8s_checks(folder):
    docs = k8s_docs(folder)
    sets = [d for d in docs if d["kind"] == "StatefulSet" and d["metadata"]["name"] == "gpuhttpd"]
    check(len(sets) == 1, "want one StatefulSet gpuhttpd")
    pod = sets[0]["spec"]["template"]
    check(sets[0]["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
          "the StatefulSet's selector does not match its pods")
    svcs = [d for d in docs if d["kind"] == "Service"
            and d["spec"]["selector"].items() <= pod["metadata"]["labels"].items()]
    check(sorted(s["metadata"]["name"] for s in svcs) == ["gpuhttpd-metrics", "gpuhttpd-pods"],
          "want two Services that select the gpuhttpd pods: the headless gpuhttpd-pods and "
          f"gpuhttpd-metrics, not {[s['metadata']['name'] for s in svcs]}")
    c = pod["spec"]["containers"][0]
    check(str(c["resources"]["limits"].get("nvidia.com/gpu")) == "1", "no nvidia.com/gpu limit")
    probes = {k: c.get(k, {}).get("httpGet", {}).get("path")
              for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    check(probes == {"startupProbe": "/healthz", "livenessProbe": "/healthz",
                     "readinessProbe": "/readyz"}, f"probes: {probes}")
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    container_ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for k in probes:
        get = c[k]["httpGet"]
        port = container_ports.get(get["port"], get["port"])
        check(str(port) == str(env.get("GHD_PROBE_PORT")) and get.get("scheme", "HTTP") == "HTTP",
              f"{k} asks port {get['port']} ({port}), not GHD_PROBE_PORT "
              f"({env.get('GHD_PROBE_PORT')}) in plain HTTP: it fails once TLS is on")
    ports = {p["name"] for p in c["ports"]}
    check(all(p["targetPort"] in ports or isinstance(p["targetPort"], int)
              for s in svcs for p in s["spec"]["ports"]), "a Service targets an unknown port")
    sec = pod["spec"].get("securityContext", {})
    check(sec.get("runAsNonRoot") is True, "pods may run as root")
    return set(e["name"] for e in c.get("env", []) if e["name"].startswith("GHD_")), c["image"]


def project_version(root):
    """The one version source (CMakeLists.txt and the Python client read it)."""
    version = read_text(os.path.join(root, "VERSION")).strip()
    check(re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version), f"VERSION says {version!r}")
    return version


def commands(text):
    """Shell lines of a text (continuations joined) that build or run an image."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [ln.strip(" #`") for ln in joined.splitlines()
            if re.search(r"\b(docker|podman) (build|run)\b", ln)]


def tag_checks(root, compose_path, k8s_image):
    """One image tag everywhere a user meets it: what the READMEs and the
    Dockerfile build and run is what compose and the StatefulSet name."""
    want = f"gpuhttpd:{project_version(root)}"
    compose = yaml.safe_load(read_text(compose_path))
    # The StatefulSet's is fully qualified (CRI-O refuses short names): the
    # name podman gives what `podman build -t gpuhttpd:VERSION` builds.
    check(k8s_image == "localhost/" + want, f"the StatefulSet's image is {k8s_image}, not "
          f"localhost/{want}")
    named = {"compose.yaml": compose["services"]["gpuhttpd"]["image"]}
    for rel in ("README.md", "docker/README.md", "docker/Dockerfile"):
        found = 0
        for cmd in commands(read_text(os.path.join(root, rel))):
            words = cmd.split()
            if re.search(r"\b(docker|podman) build\b", cmd) and "-t" in words:
                named[f"{rel}: {cmd}"] = words[words.index("-t") + 1]
                found += 1
            elif re.search(r"\b(docker|podman) run\b", cmd):
                image = [w for w in words if re.fullmatch(r"(\S+/)?gpuhttpd(:\S+)?", w)]
                named[f"{rel}: {cmd}"] = image[0] if image else "(none)"
                found += 1
        check(found, f"{rel} shows no docker build or run command")
    wrong = {where: image for where, image in named.items() if image != want}
    check(not wrong, f"image tags other than {want}: {wrong}")


def main():
    binary, root = sys.argv[1], sys.argv[2]
    docker = os.path.join(root, "docker")
    names, image_env, health_cmd = dockerfile_checks(os.path.join(docker, "Dockerfile"))
    names |= compose_checks(os.path.join(docker, "compose.yaml"), image_env)
    k8s_names, k8s_image = k8s_checks(os.path.join(docker, "k8s"))
    names |= k8s_names
    tag_checks(root, os.path.join(docker, "compose.yaml"), k8s_image)
    healthcheck_live_checks(binary, image_env, health_cmd)
    helptext = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    known = set(re.findall(r"\bGHD_[A-Z_]+\b", helptext))
    check(known, "gpuhttpd --help lists no GHD_ variables")
    unknown = sorted(names - known)
    check(not unknown, f"variables gpuhttpd does not read: {unknown}")
    readme = read_text(os.path.join(docker, "README.md"))
    check("not exercised" in readme, "docker/README.md does not say what was not exercised")
    print(f"test_docker_files: ok ({len(names)} GHD_ variables checked)")


if __name__ == "__main__":
    main()
