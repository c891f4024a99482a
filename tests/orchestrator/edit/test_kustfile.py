"""The kustomization file as ``kustomize edit`` rewrites it (kustomize's kustfile tests)."""

from __future__ import annotations

import pytest

from orchestrator.edit.kustfile import FIELD_ORDER, KustFileError, KustomizationFile


def _roundtrip(tmp_path, text, name="kustomization.yaml"):
    (tmp_path / name).write_text(text, encoding="utf-8")
    kf = KustomizationFile(str(tmp_path))
    return kf.render(kf.read())


def test_comments_kept_before_their_fields(tmp_path):
    text = """\
# shem qing some comments
# This is some comment we should preserve
# don't delete it
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../namespaces
- pod.yaml
- service.yaml
# something you may want to keep
vars:
- fieldref:
    fieldPath: metadata.name
  name: MY_SERVICE_NAME
  objref:
    apiVersion: v1
    kind: Service
    name: my-service
# some descriptions for the patches
patchesStrategicMerge:
- service.yaml
- pod.yaml
"""
    assert _roundtrip(tmp_path, text) == text


def test_comments_inside_a_field_move_above_it_and_keys_match_without_case(tmp_path):
    text = """\



# Some comments
# This is some comment we should preserve
# don't delete it
RESOURCES:
- ../namespaces
- pod.yaml
  # See which field this comment goes into
- service.yaml

apiVersion: kustomize.config.k8s.io/v1beta1
kind: kustomization

# something you may want to keep
vars:
- fieldref:
    fieldPath: metadata.name
  name: MY_SERVICE_NAME
  objref:
    apiVersion: v1
    kind: Service
    name: my-service

# some descriptions for the patches

patchesStrategicMerge:
- service.yaml
- pod.yaml
# generator options
generatorOptions:
  disableNameSuffixHash: true
"""
    expected = """\



# Some comments
# This is some comment we should preserve
# don't delete it
  # See which field this comment goes into
resources:
- ../namespaces
- pod.yaml
- service.yaml

apiVersion: kustomize.config.k8s.io/v1beta1
kind: kustomization

# something you may want to keep
vars:
- fieldref:
    fieldPath: metadata.name
  name: MY_SERVICE_NAME
  objref:
    apiVersion: v1
    kind: Service
    name: my-service

# some descriptions for the patches

patchesStrategicMerge:
- service.yaml
- pod.yaml
# generator options
generatorOptions:
  disableNameSuffixHash: true
"""
    assert _roundtrip(tmp_path, text) == expected


def test_missing_kind_and_version_are_appended_after_the_fields_the_file_had(tmp_path):
    text = """
patches:
- path: patch1.yaml
  target:
    kind: Deployment
- path: patch2.yaml
  target:
    kind: Service
"""
    expected = text + "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    assert _roundtrip(tmp_path, text) == expected


def test_document_separator_at_the_start_is_dropped(tmp_path):
    text = """\


# Some comments
# This is some comment we should preserve
# don't delete it
---
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization

namespace: mynamespace
"""
    expected = text.replace("---\n", "")
    assert _roundtrip(tmp_path, text) == expected


COMPLETE_IN_ORDER = """
kind: Kustomization
apiVersion: kustomize.config.k8s.io/v1beta1
metadata:
  annotations:
    annotation: annotation
  labels:
    label: label
  name: name
  namespace: namespace
openapi:
  path: schema.json
namePrefix: prefix
nameSuffix: suffix
namespace: namespace
commonLabels:
  commonLabel: commonLabel
labels:
- fields:
  - path: metadata.labels.label
  includeSelectors: true
  includeTemplates: true
  pairs:
    label: label
commonAnnotations:
  commonAnnotation: commonAnnotation
patches:
- path: path
images:
- digest: digest
  name: name
  newName: newName
  newTag: newTag
  tagSuffix: tagSuffix
replacements:
- path: path
replicas:
- count: 1
  name: name
sortOptions:
  legacySortOptions:
    orderFirst:
    - orderFirst
    orderLast:
    - orderLast
  order: legacy
resources:
- resource
components:
- component
crds:
- crd
configMapGenerator:
- name: name
  namespace: namespace
secretGenerator:
- name: name
  namespace: namespace
helmGlobals:
  chartHome: chartHome
  configHome: configHome
helmCharts:
- name: name
- name: chartName
generatorOptions:
  labels:
    label: label
configurations:
- configuration
generators:
- generator
transformers:
- transformer
buildMetadata:
- buildMetadata
"""


def test_every_field_written_back_unchanged_in_the_files_order(tmp_path):
    assert _roundtrip(tmp_path, COMPLETE_IN_ORDER) == COMPLETE_IN_ORDER


def test_fields_the_file_lacks_follow_kustomizes_order(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("namespace: a\n")
    kf = KustomizationFile(str(tmp_path))
    data = kf.read()
    data.update(buildMetadata=["managedByLabel"], resources=["r.yaml"], images=[{"name": "x"}])
    assert kf.render(data) == (
        "namespace: a\n"
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\n"
        "resources:\n- r.yaml\n"
        "images:\n- name: x\n"
        "buildMetadata:\n- managedByLabel\n"
    )
    assert [go for go, _ in FIELD_ORDER][:4] == ["APIVersion", "Kind", "MetaData", "SortOptions"]


def test_legacy_fields_are_folded_like_kustomize(tmp_path):
    text = (
        "kind: Component\nbases:\n- ../base\nresources:\n- a.yaml\n"
        "imageTags:\n- name: x\n  newTag: v1\n"
        "configMapGenerator:\n- name: c\n  env: a.env\n"
    )
    assert _roundtrip(tmp_path, text) == (
        "kind: Component\n"
        "resources:\n- a.yaml\n- ../base\n"
        "configMapGenerator:\n- envs:\n  - a.env\n  name: c\n"
        "apiVersion: kustomize.config.k8s.io/v1alpha1\n"
        "images:\n- name: x\n  newTag: v1\n"
    )


@pytest.mark.parametrize("name", ["kustomization.yaml", "kustomization.yml", "Kustomization"])
def test_every_recognized_file_name(tmp_path, name):
    (tmp_path / name).write_text("namespace: a\n")
    assert KustomizationFile(str(tmp_path)).name == name


def test_unknown_field_is_refused(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("\nfoo:\n  bar\n")
    with pytest.raises(KustFileError) as exc:
        KustomizationFile(str(tmp_path)).read()
    assert str(exc.value) == 'invalid Kustomization: json: unknown field "foo"'


def test_missing_and_multiple_files(tmp_path):
    with pytest.raises(KustFileError) as exc:
        KustomizationFile(str(tmp_path))
    assert str(exc.value) == "Missing kustomization file 'kustomization.yaml'.\n"
    (tmp_path / "kustomization.yaml").write_text("namespace: a\n")
    (tmp_path / "kustomization.yml").write_text("namespace: a\n")
    with pytest.raises(KustFileError) as exc:
        KustomizationFile(str(tmp_path))
    assert str(exc.value) == (
        "Found multiple kustomization file: [kustomization.yaml kustomization.yml]\n"
    )


def test_wrong_scalar_type_is_refused(tmp_path):
    (tmp_path / "kustomization.yaml").write_text("namespace: 12\n")
    with pytest.raises(KustFileError) as exc:
        KustomizationFile(str(tmp_path)).read()
    assert str(exc.value) == (
        "invalid Kustomization: json: cannot unmarshal number into Go struct field "
        "Kustomization.namespace of type string"
    )
