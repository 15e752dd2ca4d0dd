#!/usr/bin/env python3
"""Static checks of docker/ that need no Docker engine:
- the Dockerfile is multi-stage (CUDA 13.0 devel -> runtime, Ubuntu 24.04),
  builds with the README's cmake commands, runs as a non-root user, has a
  HEALTHCHECK on /healthz and the NVIDIA and GHD_BIND environment;
- compose.yaml reserves a GPU; the Kubernetes Deployment limits
  nvidia.com/gpu and probes /healthz (startup, liveness) and /readyz
  (readiness), and the Service selects its pods;
- every GHD_* variable these files set is an option `gpuhttpd --help` lists.

usage: test_docker_files.py GPUHTTPD_BINARY REPO_ROOT"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ghdtest import check, need_module  # noqa: E402

yaml = need_module("yaml", "pyyaml")


def dockerfile_checks(path):
    text = open(path, encoding="utf-8").read()
    # Join continuation lines so that each instruction is one line.
    lines = [ln.strip() for ln in re.sub(r"\\\n", " ", text).splitlines()]
    instr = [ln for ln in lines if ln and not ln.startswith("#")]
    args = dict(re.findall(r"^ARG (\w+)=(\S+)", "\n".join(instr), re.M))
    froms = [ln for ln in instr if ln.startswith("FROM ")]
    check(len(froms) == 2, f"{path}: {len(froms)} stages, not 2")

    def expand(s):  # build arguments may name others (BUILD_IMAGE uses CUDA_VERSION)
        for _ in range(len(args) + 1):
            s = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), s)
        return s

    build_img = expand(froms[0].split()[1])
    run_img = expand(froms[1].split()[1])
    check(re.fullmatch(r"nvidia/cuda:13\.0\.\d+-devel-ubuntu24\.04", build_img),
          f"build stage image {build_img}")
    check(re.fullmatch(r"nvidia/cuda:13\.0\.\d+-runtime-ubuntu24\.04", run_img),
          f"runtime image {run_img}")
    check(froms[0].split()[-2:] == ["AS", "build"], "the build stage is not named 'build'")
    check(any(ln.startswith("COPY --from=build ") for ln in instr), "nothing is copied from build")
    run_all = " ".join(ln for ln in instr if ln.startswith("RUN "))
    check("cmake -S . -B build -DCMAKE_BUILD_TYPE=Release" in run_all and
          "cmake --build build -j" in run_all, "the build does not use the README's cmake commands")
    check("server/install-deps.sh" in run_all and "swagger-ui-bundle.js" in run_all,
          "the build does not install the start command's packages (and the /docs assets)")
    users = [ln.split()[1] for ln in instr if ln.startswith("USER ")]
    check(users and users[-1].split(":")[0] not in ("0", "root"), f"runs as {users}")
    uid, _, gid = users[-1].partition(":")
    check(re.search(rf"useradd .*--uid {uid}\b", run_all), f"no useradd makes uid {uid}")
    check(not gid or re.search(rf"groupadd .*--gid {gid}\b", run_all),
          f"USER names group {gid}, which no groupadd makes")
    ignore = os.path.join(os.path.dirname(os.path.dirname(path)), ".dockerignore")
    ignored = open(ignore).read().split() if os.path.exists(ignore) else []
    check("build" in ignored and "build-*" in ignored,
          ".dockerignore does not keep the build folders out of COPY . .")
    health = [ln for ln in instr if ln.startswith("HEALTHCHECK ")]
    check(health and "/healthz" in health[0], "no HEALTHCHECK on /healthz")
    env = {}
    for ln in instr:
        if ln.startswith("ENV "):
            env.update(dict(re.findall(r"(\w+)=(\S+)", ln[4:])))
    check(env.get("NVIDIA_DRIVER_CAPABILITIES") == "compute,utility",
          f"NVIDIA_DRIVER_CAPABILITIES={env.get('NVIDIA_DRIVER_CAPABILITIES')}")
    check(env.get("GHD_BIND") == "0.0.0.0", "GHD_BIND is not 0.0.0.0 in the image")
    check(any(ln.startswith("ENTRYPOINT ") and "gpuhttpd" in ln for ln in instr), "no ENTRYPOINT")
    return set(k for k in env if k.startswith("GHD_"))


def compose_checks(path):
    doc = yaml.safe_load(open(path, encoding="utf-8"))
    svc = doc["services"]["gpuhttpd"]
    devices = svc["deploy"]["resources"]["reservations"]["devices"]
    check(any("gpu" in d.get("capabilities", []) for d in devices), "compose reserves no GPU")
    ctx = os.path.join(os.path.dirname(path), svc["build"]["context"])
    check(os.path.isfile(os.path.join(ctx, svc["build"]["dockerfile"])),
          "compose's build context and dockerfile do not exist")
    return set(k for k in svc.get("environment", {}) if k.startswith("GHD_"))


def k8s_checks(folder):
    docs = []
    for name in sorted(os.listdir(folder)):
        if name.endswith((".yaml", ".yml")):
            docs += [d for d in yaml.safe_load_all(open(os.path.join(folder, name))) if d]
    deps = [d for d in docs if d["kind"] == "Deployment"]
    svcs = [d for d in docs if d["kind"] == "Service"]
    check(len(deps) == 1 and len(svcs) == 1, "want one Deployment and one Service")
    pod = deps[0]["spec"]["template"]
    check(deps[0]["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
          "the Deployment's selector does not match its pods")
    check(svcs[0]["spec"]["selector"].items() <= pod["metadata"]["labels"].items(),
          "the Service does not select the pods")
    c = pod["spec"]["containers"][0]
    check(str(c["resources"]["limits"].get("nvidia.com/gpu")) == "1", "no nvidia.com/gpu limit")
    probes = {k: c.get(k, {}).get("httpGet", {}).get("path")
              for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    check(probes == {"startupProbe": "/healthz", "livenessProbe": "/healthz",
                     "readinessProbe": "/readyz"}, f"probes: {probes}")
    ports = {p["name"] for p in c["ports"]}
    check(all(p["targetPort"] in ports or isinstance(p["targetPort"], int)
              for p in svcs[0]["spec"]["ports"]), "the Service targets an unknown port")
    sec = pod["spec"].get("securityContext", {})
    check(sec.get("runAsNonRoot") is True, "pods may run as root")
    return set(e["name"] for e in c.get("env", []) if e["name"].startswith("GHD_"))


def main():
    binary, root = sys.argv[1], sys.argv[2]
    docker = os.path.join(root, "docker")
    names = dockerfile_checks(os.path.join(docker, "Dockerfile"))
    names |= compose_checks(os.path.join(docker, "compose.yaml"))
    names |= k8s_checks(os.path.join(docker, "k8s"))
    helptext = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    known = set(re.findall(r"\bGHD_[A-Z_]+\b", helptext))
    check(known, "gpuhttpd --help lists no GHD_ variables")
    unknown = sorted(names - known)
    check(not unknown, f"variables gpuhttpd does not read: {unknown}")
    readme = open(os.path.join(docker, "README.md"), encoding="utf-8").read()
    check("not exercised" in readme, "docker/README.md does not say what was not exercised")
    print(f"test_docker_files: ok ({len(names)} GHD_ variables checked)")


if __name__ == "__main__":
    main()
