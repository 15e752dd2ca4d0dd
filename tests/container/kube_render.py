#!/usr/bin/env python3
"""docker/k8s as `kubectl kustomize` renders it, made playable by Debian 12's
`podman kube play` (podman 4.3) on one machine, for tests/container/kube_play.sh.

Reads the rendered manifests on stdin and writes two files into OUT_DIR:
  pods.yaml   the StatefulSet's pod template as Pods gpuhttpd-0..N-1: podman
              plays no StatefulSet, so each pod is made here the way the
              StatefulSet controller makes it (name gpuhttpd-N, which is also
              its hostname, the template's labels and spec);
  proxy.yaml  the proxy's ConfigMap and Deployment, which podman plays as
              they are but for the changes below.
The Services (headless and client-facing) are left out: podman has no
Service; kube_dns.py answers the headless Service's names, and the proxy's
port is published on loopback.

Every change to what the manifests say, and why:
  - images: the CI images built from docker/Dockerfile and kube.Containerfile;
  - GHD_BACKEND=host (the template says cuda: there is no GPU here, and the
    CI image is built with CUDA off); nvidia.com/gpu stays (podman ignores it);
  - probes on named ports get the port's number: podman 4.3 makes a probe a
    `curl -f http://localhost:PORT/PATH` command with the port's number only,
    so a named port would read 0;
  - no containerPorts on the instances, and the proxy's published on
    127.0.0.1 at the given ports: podman 4.3 publishes every containerPort
    on the host at the same number (hostPort defaults to it), which N pods
    cannot all take; the pod network reaches every port regardless;
  - the instances' Secret volume (the tokens file) becomes a hostPath of the
    folder kube_play.sh writes (--tokens-dir): a Secret is not played here
    (given to podman 4.3's kube play it is stored as YAML, which the same
    kube play then fails to read, see kube_play.sh), and a hostPath is
    mounted as it is, a file of the server's group as with fsGroup;
  - each instance pod's emptyDir volumes get the pod's name in theirs:
    podman 4.3 makes an emptyDir a named volume of the volume's name ("tmp"),
    which every pod naming it would share (Kubernetes gives each pod its own);
  - the proxy at 1 replica: a second one would publish the same host ports;
  - the proxy's NAMESPACE and the instances' POD_NAMESPACE are the literal
    "default": podman's fieldRef knows metadata.name, metadata.uid, labels
    and annotations, not metadata.namespace (and it has no namespaces);
  - the proxy's DNS is kube_dns.py (dnsPolicy None, dnsConfig): the cluster
    DNS the proxy's resolvers expect.

usage: kube_render.py OUT_DIR --instances N --gpuhttpd-image IMG --haproxy-image IMG
                      --dns IP --proxy-port P --stats-port P --tokens-dir DIR
                      < rendered.yaml
"""
import argparse
import copy
import os
import sys

import yaml


def named_ports(container):
    return {p["name"]: p["containerPort"] for p in container.get("ports", []) if "name" in p}


def number_probe_ports(container):
    ports = named_ports(container)
    for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = container.get(kind, {}).get("httpGet")
        if get and isinstance(get.get("port"), str):
            get["port"] = ports[get["port"]]


def own_empty_dirs(spec, pod):
    renamed = {}
    for volume in spec.get("volumes", []):
        if "emptyDir" in volume:
            renamed[volume["name"]] = volume["name"] = f"{pod}-{volume['name']}"
    for container in spec["containers"]:
        for mount in container.get("volumeMounts", []):
            mount["name"] = renamed.get(mount["name"], mount["name"])


def host_secrets(spec, folder):
    for volume in spec.get("volumes", []):
        if "secret" in volume:
            del volume["secret"]
            volume["hostPath"] = {"path": folder, "type": "Directory"}


def set_env(container, name, value):
    for env in container["env"]:
        if env["name"] == name:
            env.pop("valueFrom", None)
            env["value"] = value
            return
    raise SystemExit(f"kube_render: the container {container['name']} has no {name}")


def only(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    if len(found) != 1:
        raise SystemExit(f"kube_render: {len(found)} {kind} documents, expected 1")
    return found[0]


def instance_pods(statefulset, instances, image, tokens_dir):
    template = statefulset["spec"]["template"]
    name = statefulset["metadata"]["name"]
    pods = []
    for n in range(instances):
        spec = copy.deepcopy(template["spec"])
        (container,) = spec["containers"]
        container["image"] = image
        set_env(container, "GHD_BACKEND", "host")
        set_env(container, "POD_NAMESPACE", "default")
        number_probe_ports(container)
        del container["ports"]
        own_empty_dirs(spec, f"{name}-{n}")
        host_secrets(spec, tokens_dir)
        labels = dict(template["metadata"].get("labels", {}))
        labels["statefulset.kubernetes.io/pod-name"] = f"{name}-{n}"
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"{name}-{n}", "labels": labels},
                     "spec": spec})
    return pods


def proxy_docs(docs, args):
    deployment = copy.deepcopy(only(docs, "Deployment"))
    spec = deployment["spec"]
    spec["replicas"] = 1
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    container["image"] = args.haproxy_image
    set_env(container, "NAMESPACE", "default")
    number_probe_ports(container)
    published = {"http": args.proxy_port, "stats": args.stats_port}
    for port in container["ports"]:
        port["hostIP"] = "127.0.0.1"
        port["hostPort"] = published[port["name"]]
    pod["dnsPolicy"] = "None"
    pod["dnsConfig"] = {"nameservers": [args.dns]}
    return [only(docs, "ConfigMap"), deployment]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--instances", type=int, required=True)
    ap.add_argument("--gpuhttpd-image", required=True)
    ap.add_argument("--haproxy-image", required=True)
    ap.add_argument("--dns", required=True)
    ap.add_argument("--proxy-port", type=int, required=True)
    ap.add_argument("--stats-port", type=int, required=True)
    ap.add_argument("--tokens-dir", required=True)
    args = ap.parse_args()
    docs = [d for d in yaml.safe_load_all(sys.stdin) if d]
    pods = instance_pods(only(docs, "StatefulSet"), args.instances, args.gpuhttpd_image,
                         args.tokens_dir)
    for name, out in (("pods.yaml", pods), ("proxy.yaml", proxy_docs(docs, args))):
        with open(os.path.join(args.out_dir, name), "w", encoding="utf-8") as f:
            yaml.safe_dump_all(out, f, sort_keys=False)
    left = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs
                  if d["kind"] not in ("StatefulSet", "Deployment", "ConfigMap"))
    print("kube_render: not played (podman has no such kind): " + ", ".join(left))


if __name__ == "__main__":
    main()
