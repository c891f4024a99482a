"""A seeded generator of kustomization trees, for differential tests against kubectl kustomize.

``write_case(root, seed)`` writes a base (workloads, services, RBAC, config) and an overlay,
sometimes a component and a middle overlay, each using a random mix of the transformers
the engine implements. The same seed always gives the same tree.
"""

from __future__ import annotations

import os
import random
from typing import Any

import yaml

KINDS_WITH_TEMPLATES = ("Deployment", "StatefulSet", "DaemonSet", "Job")


def _dump(docs: list[Any]) -> str:
    return "---\n".join(yaml.safe_dump(d, sort_keys=False) for d in docs)


class Gen:
    """Builds one random tree."""

    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.seed = seed

    def pick(self, seq: Any) -> Any:
        return self.r.choice(list(seq))

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def name(self, stem: str) -> str:
        return f"{stem}-{self.r.randint(0, 999)}"

    # ------------------------------------------------------------------ resources

    def pod_spec(self, cm: str | None, secret: str | None, sa: str | None, pvc: str | None) -> dict:
        c: dict[str, Any] = {
            "name": "main",
            "image": self.pick(["nginx", "nginx:1.25", "docker.io/library/redis:7", "busybox"]),
        }
        if cm and self.chance(0.7):
            c["envFrom"] = [{"configMapRef": {"name": cm}}]
        if secret and self.chance(0.6):
            c["env"] = [
                {
                    "name": "PASSWORD",
                    "valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}},
                }
            ]
        spec: dict[str, Any] = {"containers": [c]}
        if self.chance(0.3):
            spec["initContainers"] = [{"name": "init", "image": "busybox:1.36"}]
        vols = []
        if cm and self.chance(0.5):
            vols.append({"name": "config", "configMap": {"name": cm}})
        if pvc and self.chance(0.5):
            vols.append({"name": "data", "persistentVolumeClaim": {"claimName": pvc}})
        if vols:
            spec["volumes"] = vols
        if sa and self.chance(0.6):
            spec["serviceAccountName"] = sa
        if secret and self.chance(0.3):
            spec["imagePullSecrets"] = [{"name": secret}]
        return spec

    def workload(self, kind: str, name: str, refs: dict) -> dict:
        labels = {"app": name}
        obj: dict[str, Any] = {
            "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
            "kind": kind,
            "metadata": {"name": name, "labels": dict(labels)},
            "spec": {
                "template": {
                    "metadata": {"labels": dict(labels)},
                    "spec": self.pod_spec(
                        refs.get("cm"), refs.get("secret"), refs.get("sa"), refs.get("pvc")
                    ),
                }
            },
        }
        if kind != "Job":
            obj["spec"]["selector"] = {"matchLabels": dict(labels)}
        if kind in ("Deployment", "StatefulSet") and self.chance(0.6):
            obj["spec"]["replicas"] = self.r.randint(1, 4)
        if kind == "StatefulSet" and refs.get("svc"):
            obj["spec"]["serviceName"] = refs["svc"]
        if self.chance(0.2):
            obj["metadata"]["annotations"] = {"note": self.pick(["yes", "on", "1", "x: y"])}
        return obj

    def base(self) -> tuple[list[dict], dict]:
        docs: list[dict] = []
        refs: dict[str, Any] = {}
        ns = self.pick([None, None, "team-a"])
        if self.chance(0.5):
            refs["cm"] = self.name("settings")
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": refs["cm"]},
                    "data": {"LOG": self.pick(["info", "debug", "true", "3600"])},
                }
            )
        if self.chance(0.4):
            refs["secret"] = self.name("creds")
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": refs["secret"]},
                    "type": "Opaque",
                    "data": {"password": "c2VjcmV0"},
                }
            )
        if self.chance(0.5):
            refs["sa"] = self.name("runner")
            docs.append(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": refs["sa"]}}
            )
            role_kind = self.pick(["Role", "ClusterRole"])
            role = self.name("reader")
            docs.append(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": role_kind,
                    "metadata": {"name": role},
                    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
                }
            )
            binding_kind = (
                "RoleBinding"
                if role_kind == "Role"
                else self.pick(["RoleBinding", "ClusterRoleBinding"])
            )
            subject: dict[str, Any] = {"kind": "ServiceAccount", "name": refs["sa"]}
            if self.chance(0.5):
                subject["namespace"] = ns or "default"
            docs.append(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": binding_kind,
                    "metadata": {"name": self.name("bind")},
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": role_kind,
                        "name": role,
                    },
                    "subjects": [subject],
                }
            )
        if self.chance(0.3):
            refs["pvc"] = self.name("data")
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": refs["pvc"]},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                    },
                }
            )
        names = []
        for _ in range(self.r.randint(1, 3)):
            kind = self.pick(KINDS_WITH_TEMPLATES)
            name = self.name(kind.lower())
            names.append((kind, name))
            svc_name = name
            refs.setdefault("svc", svc_name)
            docs.append(self.workload(kind, name, refs))
            if kind != "Job" and self.chance(0.7):
                docs.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Service",
                        "metadata": {"name": svc_name},
                        "spec": {
                            "selector": {"app": name},
                            "ports": [{"port": 80, "targetPort": 8080}],
                        },
                    }
                )
                if self.chance(0.3):
                    docs.append(
                        {
                            "apiVersion": "networking.k8s.io/v1",
                            "kind": "Ingress",
                            "metadata": {"name": self.name("web")},
                            "spec": {
                                "rules": [
                                    {
                                        "http": {
                                            "paths": [
                                                {
                                                    "path": "/",
                                                    "pathType": "Prefix",
                                                    "backend": {
                                                        "service": {
                                                            "name": svc_name,
                                                            "port": {"number": 80},
                                                        }
                                                    },
                                                }
                                            ]
                                        }
                                    }
                                ]
                            },
                        }
                    )
            if kind == "Deployment" and self.chance(0.3):
                docs.append(
                    {
                        "apiVersion": "autoscaling/v2",
                        "kind": "HorizontalPodAutoscaler",
                        "metadata": {"name": self.name("hpa")},
                        "spec": {
                            "scaleTargetRef": {
                                "apiVersion": "apps/v1",
                                "kind": "Deployment",
                                "name": name,
                            },
                            "minReplicas": 1,
                            "maxReplicas": 3,
                        },
                    }
                )
        if self.chance(0.2):
            docs.append(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.name("ns")}}
            )
        if ns:
            for d in docs:
                if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
                    d["metadata"]["namespace"] = ns
        refs["workloads"] = names
        refs["ns"] = ns
        self.r.shuffle(docs)
        return docs, refs

    # ------------------------------------------------------------------ kustomizations

    def transformers(self, k: dict, refs: dict, level: str) -> dict[str, str]:
        """Add random transformer fields to kustomization ``k``; return extra files."""
        files: dict[str, str] = {}
        if self.chance(0.5):
            k["namePrefix"] = self.pick(["p-", "prod-", f"{level}-"])
        if self.chance(0.3):
            k["nameSuffix"] = self.pick(["-s", "-v2"])
        if self.chance(0.4):
            k["namespace"] = self.pick(["prod", "staging", "default"])
        if self.chance(0.3):
            k["commonLabels"] = {"team": self.pick(["web", "data"]), "tier": "backend"}
        elif self.chance(0.4):
            label: dict[str, Any] = {"pairs": {"owner": self.pick(["alice", "bob"])}}
            mode = self.pick(["sel", "tmpl", "plain", "fields"])
            if mode == "sel":
                label["includeSelectors"] = True
            elif mode == "tmpl":
                label["includeTemplates"] = True
            elif mode == "fields":
                label["fields"] = [{"path": "spec/template/metadata/labels", "create": True}]
            k["labels"] = [label]
        if self.chance(0.3):
            k["commonAnnotations"] = {
                "contact": self.pick(["ops@example.com", "true", "42"]),
            }
        if self.chance(0.4):
            img: dict[str, Any] = {
                "name": self.pick(["nginx", "busybox", "docker.io/library/redis"])
            }
            choice = self.pick(["tag", "name", "digest", "both", "suffix"])
            if choice in ("tag", "both"):
                img["newTag"] = self.pick(["1.27", "latest", "2"])
            if choice in ("name", "both"):
                img["newName"] = "registry.example.com/mirror/" + img["name"].split("/")[-1]
            if choice == "digest":
                img["digest"] = "sha256:" + "a" * 64
            if choice == "suffix":
                img["tagSuffix"] = "-debug"
            k["images"] = [img]
        workloads = refs.get("workloads") or []
        if workloads and self.chance(0.3):
            kind, name = self.pick(workloads)
            if kind in ("Deployment", "StatefulSet"):
                k["replicas"] = [{"name": name, "count": self.r.randint(0, 5)}]
        if self.chance(0.5):
            gen: dict[str, Any] = {"name": f"{level}-config"}
            if refs.get("generated_cm") and self.chance(0.4):
                gen = {"name": refs["generated_cm"], "behavior": self.pick(["merge", "replace"])}
            gen["literals"] = [f"KEY{i}={self.pick(['a', 'b c', 'true', '07'])}" for i in range(2)]
            if self.chance(0.3):
                files["app.properties"] = "color=blue\nsize=large\n"
                gen["files"] = ["app.properties"]
            if self.chance(0.2):
                gen["options"] = {"disableNameSuffixHash": True}
            k["configMapGenerator"] = [gen]
            refs.setdefault("generated_cm", gen["name"])
        if self.chance(0.25):
            k["secretGenerator"] = [{"name": f"{level}-secret", "literals": ["token=abc"]}]
        if workloads and self.chance(0.5):
            kind, name = self.pick(workloads)
            style = self.pick(["smp-file", "smp-target", "json-inline", "psm"])
            api = "batch/v1" if kind == "Job" else "apps/v1"
            smp = {
                "apiVersion": api,
                "kind": kind,
                "metadata": {"name": name},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "resources": {"limits": {"memory": "128Mi"}},
                                }
                            ]
                        }
                    }
                },
            }
            if refs["ns"]:
                smp["metadata"]["namespace"] = refs["ns"]
            if style == "smp-file":
                files["patch.yaml"] = _dump([smp])
                k["patches"] = [{"path": "patch.yaml"}]
            elif style == "psm":
                files["patch.yaml"] = _dump([smp])
                k["patchesStrategicMerge"] = ["patch.yaml"]
            elif style == "smp-target":
                del smp["metadata"]["name"]
                smp["metadata"]["name"] = "ignored"
                k["patches"] = [{"patch": _dump([smp]), "target": {"kind": kind, "name": name}}]
            else:
                # Odd seeds add one key: kustomize's internal annotations make that work even
                # on a resource without annotations (decided by the seed, so that the random
                # stream of every seed stays as it was).
                op = (
                    '[{"op": "add", "path": "/metadata/annotations/patched", "value": "yes"}]'
                    if self.seed % 2
                    else '[{"op": "add", "path": "/metadata/annotations", '
                    '"value": {"patched": "yes"}}]'
                )
                k["patches"] = [
                    {"patch": op, "target": {"kind": kind, "labelSelector": f"app={name}"}}
                ]
        if self.chance(0.2):
            k["generatorOptions"] = self.pick(
                [
                    {"labels": {"generated": "true"}},
                    {"annotations": {"gen": "1"}, "disableNameSuffixHash": True},
                    {"immutable": True},
                ]
            )
        if workloads and self.chance(0.15):
            kind, name = self.pick(workloads)
            files["delete.yaml"] = _dump(
                [
                    {
                        "$patch": "delete",
                        "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
                        "kind": kind,
                        "metadata": {
                            "name": name,
                            **({"namespace": refs["ns"]} if refs["ns"] else {}),
                        },
                    }
                ]
            )
            k.setdefault("patches", []).append({"path": "delete.yaml"})
            refs["workloads"] = [w for w in workloads if w != (kind, name)]
        if self.chance(0.3):
            plugins = []
            for _ in range(self.r.randint(1, 2)):
                plugins.append(self.plugin_config(refs))
            files["plugins.yaml"] = _dump(plugins)
            k["transformers"] = ["plugins.yaml"]
        if self.chance(0.15):
            k["sortOptions"] = {"order": "fifo"}
        return files

    def plugin_config(self, refs: dict) -> dict:
        """A builtin transformer plugin config (apiVersion: builtin)."""
        kind = self.pick(
            [
                "LabelTransformer",
                "AnnotationsTransformer",
                "NamespaceTransformer",
                "PrefixSuffixTransformer",
                "ImageTagTransformer",
                "ReplicaCountTransformer",
            ]
        )
        cfg: dict[str, Any] = {"apiVersion": "builtin", "kind": kind, "metadata": {"name": "p"}}
        if kind == "LabelTransformer":
            cfg["labels"] = {"plugin": "yes"}
            cfg["fieldSpecs"] = [
                {"path": "metadata/labels", "create": True},
                {"path": "spec/selector/matchLabels", "kind": "Deployment", "create": True},
            ]
        elif kind == "AnnotationsTransformer":
            cfg["annotations"] = {"plugin": "on"}
            cfg["fieldSpecs"] = [{"path": "metadata/annotations", "create": True}]
        elif kind == "NamespaceTransformer":
            cfg["metadata"]["namespace"] = self.pick(["plug", "default"])
            cfg["unsetOnly"] = self.chance(0.5)
            cfg["setRoleBindingSubjects"] = self.pick(["defaultOnly", "allServiceAccounts", "none"])
            cfg["fieldSpecs"] = [{"path": "metadata/namespace", "create": True}]
        elif kind == "PrefixSuffixTransformer":
            cfg["prefix"] = "pl-"
            cfg["fieldSpecs"] = [{"path": "metadata/name"}]
        elif kind == "ImageTagTransformer":
            cfg["imageTag"] = {"name": "nginx", "newTag": "plugin"}
            cfg["fieldSpecs"] = [{"path": "spec/template/spec/containers/image"}]
        else:
            workloads = refs.get("workloads") or [("Deployment", "none")]
            cfg["replica"] = {"name": self.pick(workloads)[1], "count": 7}
            cfg["fieldSpecs"] = [
                {"path": "spec/replicas", "kind": k, "create": True}
                for k in ("Deployment", "StatefulSet", "Job")
            ]
        return cfg

    def write_multibase(self, root: str) -> str:
        """Two variants of one base (own namespace/prefix each) combined by an overlay."""
        docs, refs = self.base()
        for d in docs:
            d["metadata"].pop("namespace", None)
        refs["ns"] = None
        base = os.path.join(root, "base")
        os.makedirs(base)
        with open(os.path.join(base, "resources.yaml"), "w") as f:
            f.write(_dump(docs))
        self._write_k(base, {"resources": ["resources.yaml"]}, {})
        variants = []
        for i, ns in enumerate(self.r.sample(["blue", "green", "red"], 2)):
            v = os.path.join(root, f"v{i}")
            os.makedirs(v)
            kv: dict[str, Any] = {"resources": ["../base"], "namespace": ns}
            if self.chance(0.7):
                kv["namePrefix"] = f"{ns}-"
            if self.chance(0.3):
                kv["nameSuffix"] = f"-{i}"
            if self.chance(0.5):
                kv["configMapGenerator"] = [{"name": "shared", "literals": [f"ns={ns}"]}]
            self._write_k(v, kv, {})
            variants.append(f"../v{i}")
        overlay = os.path.join(root, "overlay")
        os.makedirs(overlay)
        ko: dict[str, Any] = {"resources": variants}
        if self.chance(0.5):
            ko["namePrefix"] = "all-"
        if self.chance(0.3):
            ko["commonLabels"] = {"fleet": "yes"}
        self._write_k(overlay, ko, {})
        return overlay

    def write(self, root: str) -> str:
        """Write the tree under ``root``; return the directory to build."""
        if self.chance(0.2):
            return self.write_multibase(root)
        docs, refs = self.base()
        base = os.path.join(root, "base")
        os.makedirs(base)
        with open(os.path.join(base, "resources.yaml"), "w") as f:
            f.write(_dump(docs))
        kb: dict[str, Any] = {"resources": ["resources.yaml"]}
        extra = self.transformers(kb, refs, "base") if self.chance(0.5) else {}
        self._write_k(base, kb, extra)
        top = "base"
        if self.chance(0.3):
            mid = os.path.join(root, "mid")
            os.makedirs(mid)
            km: dict[str, Any] = {"resources": ["../base"]}
            self._write_k(mid, km, self.transformers(km, refs, "mid"))
            top = "mid"
        overlay = os.path.join(root, "overlay")
        os.makedirs(overlay)
        ko: dict[str, Any] = {"resources": [f"../{top}"]}
        extra = self.transformers(ko, refs, "ovl")
        if self.chance(0.25):
            comp = os.path.join(root, "component")
            os.makedirs(comp)
            kc: dict[str, Any] = {
                "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                "kind": "Component",
            }
            cextra = self.transformers(kc, refs, "cmp")
            kc.pop("sortOptions", None)
            if len(kc) == 2:
                kc["commonAnnotations"] = {"component": "on"}
            self._write_k(comp, kc, cextra)
            ko["components"] = ["../component"]
        self._write_k(overlay, ko, extra)
        return overlay

    @staticmethod
    def _write_k(directory: str, k: dict, files: dict[str, str]) -> None:
        for name, text in files.items():
            with open(os.path.join(directory, name), "w") as f:
                f.write(text)
        with open(os.path.join(directory, "kustomization.yaml"), "w") as f:
            f.write(yaml.safe_dump(k, sort_keys=False))


def write_case(root: str, seed: int) -> str:
    """Write the tree for ``seed`` under ``root``; return the directory to build."""
    return Gen(seed).write(root)
