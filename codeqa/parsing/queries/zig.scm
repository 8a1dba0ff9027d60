; Zig: containers are values bound to names (`const Ledger = struct { ... }`); functions
; inside them are their methods; `Ledger.init()` creates one (a factory name in the table).

(variable_declaration
  (identifier) @name.definition.struct
  (struct_declaration)) @definition.struct

(variable_declaration
  (identifier) @name.definition.enum
  (enum_declaration)) @definition.enum

(variable_declaration
  (identifier) @name.definition.union
  (union_declaration)) @definition.union

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(test_declaration
  (string
    (string_content) @name.definition.function)) @definition.function

; Calls: f(), obj.m(), Type.m().
(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (field_expression
    object: (_) @qualifier.reference.call
    member: (identifier) @name.reference.call))

; Instantiations: Ledger{ .total = 0 }.
(struct_initializer
  .
  (identifier) @name.reference.new)

; Type uses: parameter, return and field types.
(parameter
  type: [(identifier) @name.reference.type
         (pointer_type (identifier) @name.reference.type)
         (nullable_type (identifier) @name.reference.type)])

(function_declaration
  type: (identifier) @name.reference.type)

; Imports: @import("std").
(builtin_function
  (builtin_identifier) @_import
  (arguments
    (string
      (string_content) @module.import))
  (#eq? @_import "@import"))
