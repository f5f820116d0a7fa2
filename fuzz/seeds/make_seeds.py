#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz corpora from the repository's real
inputs (examples, deploy/, docs, and strings used by the tests). Run from the
repository root; the fuzzer then grows the corpus and `cargo fuzz cmin`
keeps what adds coverage. Seeds are named `seed-<what>`."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fuzz" / "corpus"


def write(target, name, text):
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    (directory / f"seed-{name}").write_bytes(data)


def embedded_herald_yaml():
    """The herald.yaml block literal of deploy/20-config.yaml, dedented."""
    lines = (ROOT / "deploy/20-config.yaml").read_text().splitlines()
    start = lines.index("  herald.yaml: |") + 1
    block = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    return "\n".join(block) + "\n"


def config_seeds():
    write("config", "examples-herald.yaml", (ROOT / "examples/herald.yaml").read_text())
    write("config", "deploy-20-config.yaml", embedded_herald_yaml())
    snippets = {
        # host/src/config.rs tests
        "empty": "",
        "unknown-key": "limits:\n  default:\n    callDeadline: 1s\n    memory: 64Mi\n    cpu: 2\n",
        "bad-duration": "limits:\n  max:\n    callDeadline: soon\n    memory: 1Gi\n",
        "bad-quantity": "limits:\n  default: {callDeadline: 1s, memory: 64 apples}\n",
        "bad-listen": "listen: not-an-address\n",
        "bad-log-format": "log:\n  format: xml\n",
        "default-above-max": "limits:\n  default: {callDeadline: 20s, memory: 64Mi}\n",
        "greedy-plugin": "plugins:\n  greedy:\n    limits: {memory: 8Gi}\n",
        "bad-plugin-name": "plugins:\n  Bad_Name: {}\n",
        "context-without-kubeconfig": "source:\n  kind: embedded\n  context: prod\n",
        "bad-sha256": "pluginFiles:\n  allowedSha256: [abc]\n",
        "leader-election": "leaderElection: {}\n",
        "lease-renew-too-long": "leaderElection:\n  leaseDuration: 10s\n  renewDeadline: 10s\n",
        "lease-retry-zero": "leaderElection:\n  retryPeriod: 0s\n",
        "lease-bad-name": "leaderElection:\n  leaseName: Herald_Lock\n",
        "lease-bad-namespace": "leaderElection:\n  leaseNamespace: kube.system\n",
        # host/tests/cli/run.rs
        "old-key": "pluginDirectory: /plugins\n",
        "backoff-inverted": "queue:\n  initialBackoff: 1m\n  maxBackoff: 1s\n",
        # sidecars (docs/config.md, tests/tests/suite/reload.rs)
        "sidecar-disabled": "disabled: true\n",
        "sidecar-memory-above-max": "limits:\n  memory: 4Gi\n",
        "sidecar-deadline": "limits:\n  callDeadline: 250ms\n",
        "sidecar-config": "config:\n  kind: {version: v1, kind: ConfigMap}\n  namespace: shop\n",
        "sidecar-image-policy": (ROOT / "examples/events/image-policy.yaml").read_text(),
        # YAML features: anchors, tags, multi-documents, flow style
        "anchors": "limits:\n  default: &l {callDeadline: 1s, memory: 64Mi}\n  max: *l\n",
        "tagged": "listen: !!str 0.0.0.0:9090\n",
        "two-documents": "log: {level: debug}\n---\nlog: {level: info}\n",
        "allow-list": "pluginFiles:\n  maxSize: 16Mi\n  allowedSha256:\n    - " + "ab" * 32 + "\n",
    }
    for name, text in snippets.items():
        write("config", name, text)


def replay_seeds():
    for path in sorted((ROOT / "examples/events").glob("*.jsonl")):
        text = path.read_text()
        write("replay_events", path.name, text)
        write("replay_events", "first-line-" + path.name, text.splitlines()[0] + "\n")
    pod = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"ns"}}'
    snippets = {
        "pretty-watch-events": '{"type":"add","object":%s}\n\n{\n  "type": "MODIFIED",\n  "object": %s\n}\n'
        '{"type":"delete","object":%s,"finalStateUnknown":true}\n' % (pod, pod, pod),
        "unknown-type": '{"type":"poke","object":%s}\n' % pod,
        "no-api-version": '{"type":"add","object":{"kind":"Pod"}}',
        "truncated": '{"type":"add",\n"object":',
        "update-with-old": '{"type":"update","old":%s,"object":%s,"resync":true,"initial":false}\n' % (pod, pod),
        "two-on-one-line": '{"type":"add","object":%s}{"type":"DELETED","object":%s}' % (pod, pod),
        "empty": "",
    }
    for name, text in snippets.items():
        write("replay_events", name, text)


def selector_seeds():
    selectors = [
        # apiserver/src/selector.rs and apiserver/tests/apiserver/lists.rs
        "app=web,tier in (front, back),!canary",
        "app=web", "app==web", "app!=web", "missing!=x", "app=db",
        "env in (prod, staging)", "env notin (prod)", "other notin (prod)",
        "env", "!env", "a=1,b=2", "a, !c, b in (2,3)", "n>4", "n<4", "n>x", "",
        "app.kubernetes.io/name=cart", "a=(", "a in b", "a in ()", "=b", "a=b=c",
        "a b", "a,", "bad key=1", "a=-x-", "Upper/x=1", "app in (",
        "app=web,env!=prod", "tier in (front,,back)", "x!=",
        # field selectors
        "metadata.name=a\\,b,metadata.namespace!=x,status.phase==Running",
        "metadata.name", "=x", "metadata.name=web-0", "spec.nodeName=node-1",
    ]
    for index, selector in enumerate(selectors):
        # The first line is the selector; labels follow (none in a seed).
        write("selectors", f"{index:02}", selector + "\n")


config_seeds()
replay_seeds()
selector_seeds()
