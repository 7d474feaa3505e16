"""The IR and tracing, as one import: the names of ``functrans.core``'s rooms.

Everything in functrans is built from this package (see DESIGN.md, "Layers").
It is a set of rooms, each written with those below it (the import-linter
contract in pyproject.toml):

* ``evaluation``: ``trace_to_jaxpr``, ``eval_jaxpr``, ``run_jaxpr``;
* ``tracing``: ``Tracer``, ``JaxprTrace``, ``Member``, ``bind``, ``bind_in_wrapper``,
  ``bind_shared`` with ``shared_params``;
* ``dispatch``: the backends of concrete arrays, ``apply_impl``, ``check_values``;
* ``ir``: ``Var``, ``Literal``, ``Eqn``, ``Jaxpr``, ``ClosedJaxpr``, printing, DOT,
  ``check_jaxpr``;
* ``primitives``: ``Primitive`` and ``registry``;
* ``context``: the per-thread trace stack and the user's source lines;
* ``caches``: ``program_cache``, ``collector_paused``;
* ``checks``: the switches of ``debug_nans`` and ``debug_infs``;
* ``avals``: ``ShapedArray``, ``get_aval``, ``Zero``.

This module only re-exports; it defines nothing.  The values that are set
after import (``checks.value_checks``, ``checks.checking``,
``dispatch.host_backend``) are read through their rooms, never from here,
so no reader keeps a copy made before they were set.
"""

from functrans.core.avals import (
    ScalarStruct,
    ShapedArray,
    ShapeDtypeStruct,
    UndefinedPrimal,
    Zero,
    get_aval,
    instantiate,
    register_aval_type,
)
from functrans.core.caches import (
    CacheInfo,
    ProgramCache,
    RecentHits,
    collector_paused,
    count_of,
    program_cache,
)
from functrans.core.checks import on_value_checks, set_value_checks
from functrans.core.context import (
    Source,
    current_source,
    derived_source,
    effects_muted,
    format_source,
    set_source,
    source_location,
    user_frame_summary,
    user_source,
)
from functrans.core.dispatch import (
    apply_impl,
    array_module,
    backend_of_type,
    check_values,
    device_backends,
    lazy_backends,
    plain_array,
    set_host_backend,
)
from functrans.core.evaluation import (
    eval_jaxpr,
    fun_name,
    jaxpr_runner,
    record,
    run_jaxpr,
    trace_to_jaxpr,
)
from functrans.core.ir import (
    Atom,
    ClosedJaxpr,
    Eqn,
    Jaxpr,
    Literal,
    Var,
    _params_key,
    check_jaxpr,
    has_effect,
    jaxpr_to_dot,
    open_jaxpr,
    pp_jaxpr,
    render_dot,
)
from functrans.core.primitives import (
    RULES,
    Primitive,
    RuleFactory,
    load_primitives_on_demand,
    lookup_primitive,
    registry,
    rule_factory,
    zero_derivative,
)
from functrans.core.sources import (
    Placings,
    SourceMap,
    SourceTable,
    placed_sources,
    remapped,
    resourced,
    same_sources,
    source_map,
    sources_of,
)
from functrans.core.tracing import (
    JaxprTrace,
    Member,
    Tracer,
    _abstract_eval,
    _avals_out,
    bind,
    bind_in_wrapper,
    bind_shared,
    current_trace,
    give_layout,
    in_jit,
    install_tracer_layout,
    memory_layout,
    shared_params,
    tracer_layout,
)

__all__ = [
    "RULES", "Atom", "CacheInfo", "ClosedJaxpr", "Eqn", "Jaxpr", "JaxprTrace", "Literal", "Member",
    "Placings", "Primitive", "ProgramCache", "RecentHits", "RuleFactory", "ScalarStruct",
    "ShapeDtypeStruct", "ShapedArray", "Source", "SourceMap", "SourceTable", "Tracer",
    "UndefinedPrimal", "Var", "Zero", "_abstract_eval", "_avals_out", "_params_key", "apply_impl",
    "array_module", "backend_of_type", "bind", "bind_in_wrapper", "bind_shared", "check_jaxpr",
    "check_values", "collector_paused",
    "count_of", "current_source", "current_trace", "derived_source", "device_backends",
    "effects_muted", "eval_jaxpr", "format_source", "fun_name", "get_aval", "give_layout",
    "has_effect", "in_jit", "install_tracer_layout", "instantiate", "jaxpr_runner",
    "jaxpr_to_dot", "lazy_backends",
    "load_primitives_on_demand", "lookup_primitive", "memory_layout", "on_value_checks",
    "open_jaxpr", "placed_sources", "plain_array", "pp_jaxpr", "program_cache", "record",
    "register_aval_type", "registry", "remapped", "render_dot", "resourced", "rule_factory",
    "run_jaxpr", "same_sources", "set_host_backend", "set_source", "set_value_checks",
    "shared_params",
    "source_location", "source_map", "sources_of", "trace_to_jaxpr", "tracer_layout",
    "user_frame_summary", "user_source", "zero_derivative",
]
