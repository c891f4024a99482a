"""Strategic merge patch with kustomize v5.5.0 (kyaml ``merge2``) semantics.

This follows kyaml's walker rather than Kubernetes' apimachinery: maps merge recursively,
``null`` deletes, a list merges element-wise only when the schema gives it a ``merge``
strategy (keys: ``x-kubernetes-list-map-keys`` or ``x-kubernetes-patch-merge-key``;
primitive lists such as finalizers union), every other list is replaced; merged lists
put the patch's elements first (kustomize's ``ListIncreaseDirection: Prepend``). The
directives kyaml knows are ``$patch: replace|delete|merge`` on maps and lists.
``$setElementOrder/…``, ``$retainKeys`` and ``$deleteFromPrimitiveList/…`` are *not*
interpreted by kustomize: they are ordinary fields and end up in the output, and so they
do here. kyaml never infers merge keys during patching, so lists of unknown types are
replaced.

The walk mirrors kyaml's in-place algorithm on private copies of both inputs, including
its quirks (a ``$patch: replace`` on a list element keeps the target's element; elements
that are null or ``{}`` drop out of merged lists), because the oracle is kustomize's
actual output.
"""

from __future__ import annotations

from orchestrator.errors import PatchError
from orchestrator.openapi import PatchSchema
from orchestrator.resource import Gvk, ImplicitNullMap

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up
if TYPE_CHECKING:
    from typing import Any

    from orchestrator.openapi import SchemaNode

__all__ = ["merge"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


class _KeepNull:
    __slots__ = ()

    def __repr__(self) -> str:
        return "KEEP_NULL"


# kyaml's nil node (absent field / cleared value).
MISSING: Any = _Missing()
# kyaml's "persistent null": a null in the target that the patch did not touch stays.
KEEP_NULL: Any = _KeepNull()

_DELETE, _REPLACE, _MERGE = "delete", "replace", "merge"
_DIRECTIVE = "$patch"


def merge(
    target: dict[str, Any],
    patch: dict[str, Any],
    *,
    gvk: Gvk,
    schema: PatchSchema | None = None,
) -> dict[str, Any] | None:
    """Merge ``patch`` into ``target``; None when the patch deletes the whole object.

    Neither input is modified and the result shares no containers with them (the walk
    runs on private copies). Name, namespace and kind are merged like any field;
    restoring them, as kustomize's ApplySmPatch does, is the caller's business.
    """
    if schema is None:
        schema = PatchSchema.default()
    walker = _Walker(schema)
    dest = _copy(target)
    origin = _copy(patch)
    root = schema.root(gvk)
    result = walker.walk([dest, origin], root)
    # kustomize drops a resource that the patch left nil or empty (IsNilOrEmpty).
    if result is MISSING or result is None or result is KEEP_NULL or result == {}:
        return None
    if not isinstance(result, dict):
        raise PatchError(f"strategic merge patch produced a {type(result).__name__}, not a map")
    return result


def _copy(o: Any) -> Any:
    # Faster than copy.deepcopy for plain YAML data (dict/list/scalars only).
    if o.__class__ is dict:
        return {k: _copy(v) for k, v in o.items()}
    if o.__class__ is list:
        return [_copy(v) for v in o]
    if o.__class__ is ImplicitNullMap:
        return ImplicitNullMap({k: _copy(v) for k, v in o.items()}, o.implicit_nulls)
    if isinstance(o, dict):
        return {k: _copy(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_copy(v) for v in o]
    return o


def _must_walk(o: dict[str, Any], typed: bool) -> bool:
    """True if kyaml's walk would change the untouched map ``o``: a map nested in it (through
    maps only: kyaml never walks into lists without a schema) holds a value left empty
    (``key:``, dropped), or, with ``typed``, has apiVersion and kind, which kyaml would give
    a schema."""
    if typed and "apiVersion" in o and "kind" in o:
        return True
    for v in o.values():
        cls = v.__class__
        if cls is ImplicitNullMap or (cls is dict and _must_walk(v, typed)):
            return True
    return False


def _is_normal(lst: list[Any], keys: list[str]) -> bool:
    """True if kyaml's merge of ``lst`` with nothing keeps every element in place."""
    seen: set[Any] = set()
    if not keys:
        for item in lst:
            if item is None or isinstance(item, dict | list):
                return False
            t = _text(item)
            if t == "" or t in seen:
                return False
            seen.add(t)
        return True
    for elem in lst:
        if elem.__class__ is not dict:
            return False
        vals = []
        for key in keys:
            v = elem.get(key)
            if v is None or isinstance(v, dict | list):
                return False
            t = _text(v)
            if t == "":
                return False
            vals.append(t)
        tv = tuple(vals)
        if tv in seen:
            return False
        seen.add(tv)
    return True


def _null(n: Any) -> bool:
    """kyaml IsMissingOrNull."""
    return n is MISSING or n is None or n is KEEP_NULL


def _text(v: Any) -> str:
    """The scalar text kyaml compares (yaml.Node.Value); maps, lists and nulls give ""."""
    if v.__class__ is str:
        return v
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None or v is MISSING or v is KEEP_NULL or isinstance(v, dict | list):
        return ""
    return str(v)


def _kind_name(v: Any) -> str:
    if isinstance(v, dict):
        return "MappingNode"
    if isinstance(v, list):
        return "SequenceNode"
    return "ScalarNode"


def _apply_directive(dest: Any, origin: Any) -> Any:
    """Merge result for an existing map or list: an explicit null or ``$patch: delete`` drops it,
    ``$patch: replace`` takes the patch's value, anything else keeps ``dest`` for the walk."""
    if origin is None:
        return MISSING
    ps = _directive(origin)
    if ps == _DELETE:
        return MISSING
    if ps == _REPLACE:
        return origin
    return dest


_MAX_SHOWN = 2000


def _wrong_kind(expected: str, node: Any) -> PatchError:
    import yaml  # only on the error path

    try:
        content = yaml.safe_dump(node, default_flow_style=False, sort_keys=False)
    except yaml.YAMLError:
        content = repr(node)
    if len(content) > _MAX_SHOWN:  # one error line, not a copy of a huge value
        content = f"{content[:_MAX_SHOWN]}… ({len(content)} characters in all)\n"
    return PatchError(
        f"wrong node kind: expected {expected} but got {_kind_name(node)}: "
        f"node contents:\n{content}"
    )


class _Walker:
    """kyaml walk.Walker + merge2.Merger, specialised for SMP with prepend lists."""

    __slots__ = ("schema",)

    def __init__(self, schema: PatchSchema) -> None:
        self.schema = schema

    # -- Walker.Walk ---------------------------------------------------------------------

    def walk(self, sources: list[Any], node: SchemaNode) -> Any:
        if sources[1] is MISSING:
            # Fast path: the patch does not touch this subtree. Where nothing below can be a
            # merge list, kyaml's walk hands the target's subtree back unchanged.
            dest = sources[0]
            if dest is None:
                return KEEP_NULL
            cls = dest.__class__
            if cls is dict:
                if (node == 0 or node is None) and not _must_walk(dest, node is None):
                    return dest
            elif cls is list:
                if node.__class__ is not list:
                    return dest
            elif cls is not ImplicitNullMap:
                return dest
        if node is None:
            node = self._schema_from_meta(sources)
        kind = None
        for s in sources:
            if not _null(s):
                kind = s.__class__
                break
        if kind is None:
            return self.walk_map(sources, node)
        if issubclass(kind, dict):
            self._check(sources, dict, "MappingNode")
            return self.walk_map(sources, node)
        if issubclass(kind, list):
            self._check(sources, list, "SequenceNode")
            if PatchSchema.is_merge_list(node):
                return self.walk_associative(sources, node)
            # Non-associative list: the patch's value wins whole.
            return sources[1] if sources[1] is not MISSING else sources[0]
        for s in sources:
            if not _null(s) and isinstance(s, dict | list):
                raise _wrong_kind("ScalarNode", s)
        return sources[1] if sources[1] is not MISSING else sources[0]

    def _check(self, sources: list[Any], cls: type, name: str) -> None:
        for s in sources:
            if not _null(s) and not isinstance(s, cls):
                raise _wrong_kind(name, s)

    def _schema_from_meta(self, sources: list[Any]) -> SchemaNode:
        # kyaml looks up the type of any nested map that carries apiVersion and kind.
        for s in sources:
            if isinstance(s, dict):
                av = s.get("apiVersion")
                k = s.get("kind")
                if av and k and not isinstance(av, dict | list) and not isinstance(k, dict | list):
                    found = self.schema.root_for(_text(av), _text(k))
                    if found is not None:
                        return found
        return None

    # -- maps ------------------------------------------------------------------------------

    def visit_map(self, sources: list[Any]) -> Any:
        dest, origin = sources[0], sources[1]
        if _null(dest):
            try:
                ps = _directive(origin)
            except PatchError:
                ps = None  # kyaml ignores the error when adding a new map
            if ps == _DELETE:
                return MISSING
            if origin is MISSING and dest is not MISSING:
                return KEEP_NULL
            return origin
        return _apply_directive(dest, origin)

    def walk_map(self, sources: list[Any], node: SchemaNode) -> Any:
        dest = self.visit_map(sources)
        sources[0] = dest
        if dest is MISSING:
            return MISSING
        if not isinstance(dest, dict):
            return dest
        names: set[str] = set()
        for s in sources:
            if isinstance(s, dict):
                names.update(s)
        field = self.schema.field
        # Values left empty (``key:``; read as None, or "" in a flow mapping) are nulls to
        # kyaml: dropped where the patch does not set them, while an explicit null stays
        # (merge2: "preserve explicitly set null"); in the patch they delete.
        implicit = dest.implicit_nulls if dest.__class__ is ImplicitNullMap else ()
        origin = sources[1]
        p_implicit = origin.implicit_nulls if origin.__class__ is ImplicitNullMap else ()
        for name in sorted(names, key=_sort_key):
            fv = [s.get(name, MISSING) if isinstance(s, dict) else MISSING for s in sources]
            if name in implicit and fv[1] is MISSING and (fv[0] is None or fv[0] == ""):
                del dest[name]
                continue
            if name in p_implicit and fv[1] == "":
                fv[1] = None
            val = self.walk(fv, field(node, name))
            if val is MISSING or val is None:
                dest.pop(name, None)
            elif val is KEEP_NULL:
                dest[name] = None
            else:
                if val.__class__ is not str and name in dest:
                    styled = _restyle(dest[name], val)
                    if styled is not val:
                        val = styled
                        origin = sources[1]
                        if isinstance(origin, dict) and name in origin:
                            # kyaml restyles the patch's own node, which may be used again.
                            origin[name] = styled
                dest[name] = val
        return dest

    # -- associative lists -----------------------------------------------------------------

    def visit_list(self, sources: list[Any]) -> Any:
        dest, origin = sources[0], sources[1]
        if _null(dest):
            return origin
        return _apply_directive(dest, origin)

    def walk_associative(self, sources: list[Any], node: SchemaNode) -> Any:
        dest = self.visit_list(sources)
        sources[0] = dest
        if dest is MISSING:
            return MISSING
        _, keys = PatchSchema.merge_keys(node)
        if sources[1] is MISSING and _is_normal(dest, keys):
            # Fast path: with no patch and distinct, complete keys, kyaml's element-wise
            # walk rebuilds the same list; only the elements need walking.
            elem_node = PatchSchema.elements(node)
            for elem in dest:
                self.walk([elem, MISSING], elem_node)
            return dest
        values = self.element_values(sources, keys)
        if values or keys:
            return self.set_elements(sources, node, values, keys, dest)
        return self.set_elements(sources, node, self.primitive_values(sources), [""], dest)

    def element_values(self, sources: list[Any], keys: list[str]) -> list[list[str]]:
        out: list[list[str]] = []
        seen: set[tuple[str, ...]] = set()
        # Prepend: the patch's elements come first.
        for src in (sources[1], sources[0]):
            if src is MISSING or not isinstance(src, list):
                continue
            for elem in src:
                vals = []
                for key in keys:
                    v = elem.get(key, MISSING) if isinstance(elem, dict) else MISSING
                    if v is MISSING or v is None or v == {} or v == []:
                        vals.append("")
                    else:
                        vals.append(_text(v))
                tv = tuple(vals)
                if not vals or tv in seen:
                    continue
                out.append(vals)
                seen.add(tv)
        return out

    def primitive_values(self, sources: list[Any]) -> list[list[str]]:
        out: list[list[str]] = []
        seen: set[str] = set()
        for src in (sources[1], sources[0]):
            if src is MISSING or not isinstance(src, list):
                continue
            for item in src:
                t = _text(item)
                if t in seen:
                    continue
                out.append([t])
                seen.add(t)
        return out

    def set_elements(
        self,
        sources: list[Any],
        node: SchemaNode,
        values_list: list[list[str]],
        keys: list[str],
        dest: list[Any],
    ) -> Any:
        items: list[Any] = []
        elem_node = PatchSchema.elements(node)
        if len(keys) > 1:
            values_list = _merge_values(values_list)
        valid_keys: list[str] = []
        for values in values_list:
            if not values:
                continue
            valid_keys, valid_values = _validate_keys(values_list, values, keys)
            val = self.walk(_element_value_list(sources, valid_keys, valid_values), elem_node)
            exit_ = False
            for i, key in enumerate(valid_keys):
                if _null(val) or (isinstance(val, dict) and not val):
                    _element_setter(dest, MISSING, valid_keys, valid_values)
                    exit_ = True
                elif valid_values[i] != "" and not (isinstance(val, dict) and key in val):
                    val = self._set_key(val, key, valid_values[i])
            if exit_:
                continue
            _element_setter(items, val, valid_keys, valid_values)
        if values_list:
            dest = _append_list_node(items, dest, valid_keys)
        if _null(dest):
            return MISSING
        return dest

    def _set_key(self, val: Any, key: str, text: str) -> Any:
        if key == "":
            return val  # a scalar element set to its own text: no change
        if not isinstance(val, dict):
            raise _wrong_kind("MappingNode", val)
        # kyaml sets a plain scalar with this text, so it reads back by YAML's rules.
        val[key] = _plain_value(text)
        return val


def _restyle(old: Any, new: Any) -> Any:
    """kyaml's FieldSetter gives the new value the old value's style: quoted stays a string."""
    if old.__class__ is not str or isinstance(new, dict | list) or new is None:
        return new
    if "\n" in old or _plain_type(old) != "str":
        # Only a quoted (or block) scalar can hold this text as a string.
        return _text(new)
    return new


def _plain_value(text: str) -> Any:
    kind = _plain_type(text)
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            return text
    if kind == "bool" and text in ("true", "false"):
        return text == "true"
    return text


def _plain_type(text: str) -> str:
    from yaml import ScalarNode  # rare path: a typed value replaces a string
    from yaml.resolver import Resolver

    # types-PyYAML leaves BaseResolver.resolve unannotated (it returns the tag, a str)
    tag: str = Resolver().resolve(ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return tag.rsplit(":", 1)[-1]


def _sort_key(name: Any) -> str:
    return name if name.__class__ is str else _text(name)


def _directive(patch: Any) -> str:
    """kyaml determineSmpDirective: find, validate and remove a ``$patch`` directive."""
    if patch is MISSING:
        return _MERGE
    if isinstance(patch, list):
        for elem in patch:
            if isinstance(elem, dict) and _DIRECTIVE in elem:
                break
        else:
            return _MERGE
        # A $patch element with other fields is about that element, not the list.
        if len(elem) > 1:
            return _MERGE
        v = _text(elem[_DIRECTIVE])
        if v in (_DELETE, _REPLACE, _MERGE):
            _element_setter(patch, MISSING, [_DIRECTIVE], [v])
            return v
        raise PatchError(f"unknown patch strategy '{v}'")
    if isinstance(patch, dict):
        if _DIRECTIVE not in patch:
            return _MERGE
        v = _text(patch[_DIRECTIVE])
        if v in (_DELETE, _REPLACE, _MERGE):
            del patch[_DIRECTIVE]
            return v
        raise PatchError(f"unknown patch strategy '{v}'")
    raise PatchError(
        f"no implemented strategic merge patch strategy for {_kind_name(patch)} ({patch!r})"
    )


def _validate_keys(
    values_list: list[list[str]], values: list[str], keys: list[str]
) -> tuple[list[str], list[str]]:
    valid_set = set()
    for vals in values_list:
        for i, v in enumerate(vals):
            if v != "":
                valid_set.add(keys[i])
    if not valid_set:
        return keys, values
    valid_keys = [k for k in keys if k in valid_set]
    valid_values = [v for i, v in enumerate(values) if v != "" or keys[i] in valid_set]
    return valid_keys, valid_values


def _merge_values(values_list: list[list[str]]) -> list[list[str]]:
    for i in range(len(values_list)):
        # Go's range copies values_list[i] once per outer iteration.
        first = values_list[i]
        for j in range(len(values_list)):
            matched, vals = _match(first, values_list[j])
            if matched:
                values_list[i] = vals
                values_list[j] = vals
    return values_list


def _match(v1: list[str], v2: list[str]) -> tuple[bool, list[str]]:
    if len(v1) != len(v2):
        return False, []
    common = False
    res = []
    for a, b in zip(v1, v2, strict=True):
        if a == b:
            common = True
            res.append(a)
            continue
        if a != "" and b != "":
            return False, []
        res.append(a if a != "" else b)
    return common, res


def _element_value_list(sources: list[Any], keys: list[str], values: list[str]) -> list[Any]:
    keys, values = _validate_keys([values], values, keys)
    out = []
    for src in sources:
        if src is MISSING or not isinstance(src, list):
            out.append(MISSING)
        else:
            out.append(_element_matcher(src, keys, values))
    return out


def _element_matcher(lst: list[Any], keys: list[str], values: list[str]) -> Any:
    """kyaml ElementMatcher: the first element matching all key/value pairs."""
    if not keys:
        keys = [""]
    if not values:
        values = [""]
    if not keys[0]:
        for item in lst:
            if _text(item) == values[0]:
                return item
        return MISSING
    for elem in lst:
        if not isinstance(elem, dict):
            continue
        if len(keys) != len(values):
            raise PatchError(
                "length of keys must equal length of values when MatchAnyValue is false"
            )
        for k, v in zip(keys, values, strict=True):
            # kyaml MatchField: the value must equal exactly, "" included.
            if k not in elem or _text(elem[k]) != v:
                break
        else:
            return elem
    return MISSING


def _field_matches(rn: Any, name: str, value: str) -> bool:
    """kyaml FieldMatcher{Name, StringValue}: "" matches any value of a present field."""
    if _null(rn):
        return False
    if name == "":
        if isinstance(rn, dict | list):
            raise _wrong_kind("ScalarNode", rn)
        return _text(rn) == value
    if not isinstance(rn, dict):
        raise _wrong_kind("MappingNode", rn)
    if name not in rn:
        return False
    return value == "" or _text(rn[name]) == value


def _element_setter(lst: list[Any], element: Any, keys: list[str], values: list[str]) -> None:
    """kyaml ElementSetter: replace the element matching keys/values, else append.

    With ``element`` MISSING it removes the matches. Like kyaml it also drops null and
    empty-map elements from the list.
    """
    if not keys:
        keys = [""]
    mapping_setter = keys[0] != "" and bool(values) and values[0] != ""
    new: list[Any] = []
    found_match = False
    for elem in lst:
        if _null(elem) or (isinstance(elem, dict) and not elem):
            continue
        if not isinstance(elem, dict) and mapping_setter:
            new.append(elem)
            continue
        found = True
        matched = False  # kyaml's `val` starts nil
        for j in range(len(keys)):
            if j < len(values):
                key = keys[j]
                if key and elem.__class__ is dict:  # inlined _field_matches, the hot case
                    matched = key in elem and (not values[j] or _text(elem[key]) == values[j])
                else:
                    matched = _field_matches(elem, key, values[j])
            if not matched:
                found = False
                break
        if not found:
            if values:
                new.append(elem)
            continue
        found_match = True
        if element is MISSING:
            continue
        new.append(element)
    lst[:] = new
    if _null(element):
        return
    if not found_match:
        lst.append(element)


def _append_list_node(dst: list[Any], src: list[Any], keys: list[str]) -> list[Any]:
    for elem in src:
        if keys[0] == "":
            _element_setter(dst, elem, [""], [_text(elem)])
            continue
        v: list[str] = []
        for key in keys:
            if _null(elem):
                dst.append(elem)
                continue
            if not isinstance(elem, dict):
                raise _wrong_kind("MappingNode", elem)
            if key not in elem:
                # kyaml appends a keyless element, then still runs the setter below.
                dst.append(elem)
                continue
            v.append(_text(elem[key]))
        if len(keys) > 1:
            _element_setter(dst, MISSING, keys, v)
        _element_setter(dst, elem, keys, v)
    return dst
