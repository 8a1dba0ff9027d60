; Rust: definitions, references and imports in the shared capture vocabulary.

(struct_item
  name: (type_identifier) @name.definition.struct) @definition.struct

(enum_item
  name: (type_identifier) @name.definition.enum) @definition.enum

(union_item
  name: (type_identifier) @name.definition.union) @definition.union

(trait_item
  name: (type_identifier) @name.definition.trait) @definition.trait

(type_item
  name: (type_identifier) @name.definition.type) @definition.type

; impl Type / impl Trait for Type / impl<T> Type<T>: named after the type, generics dropped.
(impl_item
  type: [
    (type_identifier) @name.definition.impl
    (generic_type type: (type_identifier) @name.definition.impl)
    (scoped_type_identifier name: (type_identifier) @name.definition.impl)
    (generic_type type: (scoped_type_identifier name: (type_identifier) @name.definition.impl))
  ]) @definition.impl

; Functions; inside impl/trait blocks the walker makes them methods.
(function_item
  name: (identifier) @name.definition.function) @definition.function

(function_signature_item
  name: (identifier) @name.definition.function) @definition.function

; macro_rules! name { ... } (`macro` 2.0 items are not in the grammar: they parse as errors).
(macro_definition
  name: (identifier) @name.definition.macro) @definition.macro

; Constants and statics of a module, impl or trait (not the locals of a function body).
(source_file
  [(const_item name: (identifier) @name.definition.constant)
   (static_item name: (identifier) @name.definition.constant)] @definition.constant)

(declaration_list
  [(const_item name: (identifier) @name.definition.constant)
   (static_item name: (identifier) @name.definition.constant)] @definition.constant)

; Calls: f(), obj.m(), Type::m() (Foo::new() is a call of new qualified by Foo).
(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (scoped_identifier
    path: (_) @qualifier.reference.call
    name: (identifier) @name.reference.call))

(call_expression
  function: (field_expression
    value: (_) @qualifier.reference.call
    field: (field_identifier) @name.reference.call))

(call_expression
  function: (generic_function
    function: (identifier) @name.reference.call))

(call_expression
  function: (generic_function
    function: (scoped_identifier
      path: (_) @qualifier.reference.call
      name: (identifier) @name.reference.call)))

; Macro invocations are calls of the macro: select!(..), tokio::select! {..}; the standard
; library's own macros are left out (they never resolve to a definition in the repo).
(macro_invocation
  macro: (identifier) @name.reference.call
  (#not-match? @name.reference.call "^(assert|assert_eq|assert_ne|debug_assert|debug_assert_eq|debug_assert_ne|vec|format|format_args|write|writeln|print|println|eprint|eprintln|panic|unreachable|unimplemented|todo|matches|dbg|concat|stringify|include_str|include_bytes|env|cfg|line|file|column|module_path)$"))

(macro_invocation
  macro: (scoped_identifier
    path: (_) @qualifier.reference.call
    name: (identifier) @name.reference.call))

; Instantiations: Foo { .. }, module::Foo { .. }.
(struct_expression
  name: (type_identifier) @name.reference.new)

(struct_expression
  name: (scoped_type_identifier
    path: (_) @qualifier.reference.new
    name: (type_identifier) @name.reference.new))

; Type uses anywhere: fields, parameters, returns, impl traits, generic args.
(type_identifier) @name.reference.type

(scoped_type_identifier
  path: (_) @qualifier.reference.type
  name: (type_identifier) @name.reference.type)

; Reads of values: a name written as consts and statics are (UPPER_CASE), bare or by path
; (`config::MAX`, `Limits::MAX`). Calls and definitions win on the same node.
((identifier) @name.reference.read
  (#match? @name.reference.read "^[A-Z][A-Z0-9_]*$"))

(scoped_identifier
  path: (_) @qualifier.reference.read
  name: (identifier) @name.reference.read
  (#match? @name.reference.read "^[A-Z][A-Z0-9_]*$"))

(const_item name: (identifier) @name.written)
(static_item name: (identifier) @name.written)
(let_declaration pattern: (identifier) @name.written)

; Imports: use a::b::C; use a::{B, C}; mod x;
(use_declaration
  argument: [
    (identifier)
    (scoped_identifier)
  ] @module.import)

(use_declaration
  argument: (scoped_identifier
    name: (identifier) @name.import))

(use_declaration
  argument: (use_as_clause
    path: (_) @module.import))

(use_declaration
  argument: (scoped_use_list
    path: (_) @module.import))

(use_declaration
  argument: (scoped_use_list
    list: (use_list
      [
        (identifier) @name.import
        (scoped_identifier name: (identifier) @name.import)
      ])))

(mod_item
  name: (identifier) @module.import
  !body)
