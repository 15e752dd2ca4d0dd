#!/usr/bin/env python3
"""The cluster DNS of tests/container/kube_play.sh: answers A queries for the
names in a hosts file (one "IP NAME" a line, read again on every query),
NXDOMAIN for other names, and no records for other types of a known name
(so HAProxy, which asks AAAA first, falls back to A). It stands in for the
cluster's DNS, which serves the headless Service's gpuhttpd-N.gpuhttpd-pods
names: podman's CNI networks on Debian 12 have no DNS of their own, and the
proxy's resolvers read only the nameservers of resolv.conf, never /etc/hosts.

usage: kube_dns.py ADDRESS HOSTS_FILE   (UDP port 53 on ADDRESS; prints "ready")
"""
import socket
import struct
import sys

TTL = 5  # seconds, as the proxy holds a valid answer (hold valid 5s)
TYPE_A = 1


def read_hosts(path):
    names = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                names[parts[1].lower().rstrip(".")] = socket.inet_aton(parts[0])
    return names


def parse_question(msg):
    """(name, qtype, end of the question) of a query's first question."""
    labels, i = [], 12
    while msg[i]:
        if msg[i] & 0xC0:
            raise ValueError("compressed name in a question")
        labels.append(msg[i + 1:i + 1 + msg[i]].decode("ascii"))
        i += 1 + msg[i]
    qtype, _ = struct.unpack("!HH", msg[i + 1:i + 5])
    return ".".join(labels).lower(), qtype, i + 5


def answer(msg, hosts_file):
    ident, flags, qdcount = struct.unpack("!HHH", msg[:6])
    if flags & 0x8000 or qdcount != 1:
        return None  # a reply, or not one question: not ours to answer
    name, qtype, end = parse_question(msg)
    addr = read_hosts(hosts_file).get(name)
    rd = flags & 0x0100
    rcode = 3 if addr is None else 0  # NXDOMAIN for a name we do not know
    records = b""
    if addr is not None and qtype == TYPE_A:
        # The name as a pointer to the question (offset 12), class IN.
        records = struct.pack("!HHHIH", 0xC00C, TYPE_A, 1, TTL, 4) + addr
    header = struct.pack("!HHHHHH", ident, 0x8400 | rd | rcode, 1,
                         1 if records else 0, 0, 0)
    return header + msg[12:end] + records


def main():
    address, hosts_file = sys.argv[1], sys.argv[2]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, 53))
    print("ready", flush=True)
    while True:
        msg, peer = sock.recvfrom(4096)
        try:
            reply = answer(msg, hosts_file)
        except (ValueError, IndexError, struct.error, UnicodeDecodeError):
            continue  # not a query we can read: dropped, as a server may
        if reply:
            sock.sendto(reply, peer)


if __name__ == "__main__":
    main()
