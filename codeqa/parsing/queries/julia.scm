; Julia: definitions, references and imports in the shared capture vocabulary. A docstring is
; the string right before a definition, captured as @doc with it (earlier patterns win on the
; same node, so the documented forms come first).

((string_literal) @doc
 .
 (function_definition
   (signature
     (call_expression
       .
       [(identifier) @name.definition.function
        (field_expression (identifier) @name.definition.function .)]))) @definition.function)

((string_literal) @doc
 .
 (struct_definition
   (type_head
     [(identifier) @name.definition.struct
      (binary_expression . (identifier) @name.definition.struct)])) @definition.struct)

(module_definition
  name: (identifier) @name.definition.namespace) @definition.namespace

(function_definition
  (signature
    (call_expression
      .
      [(identifier) @name.definition.function
       (field_expression (identifier) @name.definition.function .)]))) @definition.function

(macro_definition
  (signature
    (call_expression
      .
      (identifier) @name.definition.macro))) @definition.macro

(struct_definition
  (type_head
    [(identifier) @name.definition.struct
     (binary_expression . (identifier) @name.definition.struct)])) @definition.struct

(abstract_definition
  (type_head
    [(identifier) @name.definition.type
     (binary_expression . (identifier) @name.definition.type)])) @definition.type

; Short functions: f(x) = x + 1 (at the top of a file or a module, not inside a body).
(source_file
  (assignment
    .
    (call_expression
      .
      (identifier) @name.definition.function)) @definition.function)

(module_definition
  (assignment
    .
    (call_expression
      .
      (identifier) @name.definition.function)) @definition.function)

; Calls: f(x), Mod.f(x), Type(x) (an instantiation, by the resolver).
(call_expression
  .
  (identifier) @name.reference.call)

(call_expression
  .
  (field_expression
    value: (_) @qualifier.reference.call
    (identifier) @name.reference.call .))

; Type uses: x::T annotations, T{...} parameters.
(typed_expression
  (identifier) @name.reference.type .)

; Imports: using X, import X.Y
(using_statement
  [(identifier) (import_path)] @module.import)

(import_statement
  [(identifier) (import_path)] @module.import)
