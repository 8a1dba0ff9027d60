; Go: definitions, references and imports in the shared capture vocabulary.

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

; func (s *Server) Start(): the receiver type is the owner.
(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @scope.definition.method
        (pointer_type (type_identifier) @scope.definition.method)
        (generic_type type: (type_identifier) @scope.definition.method)
        (pointer_type (generic_type type: (type_identifier) @scope.definition.method))
      ]))
  name: (field_identifier) @name.definition.method) @definition.method

(type_spec
  name: (type_identifier) @name.definition.struct
  type: (struct_type)) @definition.struct

(type_spec
  name: (type_identifier) @name.definition.interface
  type: (interface_type)) @definition.interface

(type_spec
  name: (type_identifier) @name.definition.type) @definition.type

(type_alias
  name: (type_identifier) @name.definition.type) @definition.type

; Package-level values: var f = func(..) {..} is a function; other vars and consts are values.
(source_file
  (var_declaration
    (var_spec
      name: (identifier) @name.definition.function
      value: (expression_list . (func_literal) .)) @definition.function))

(source_file
  (var_declaration
    (var_spec_list
      (var_spec
        name: (identifier) @name.definition.function
        value: (expression_list . (func_literal) .)) @definition.function)))

(source_file
  (var_declaration
    (var_spec
      name: (identifier) @name.definition.variable) @definition.variable))

(source_file
  (var_declaration
    (var_spec_list
      (var_spec
        name: (identifier) @name.definition.variable) @definition.variable)))

(source_file
  (const_declaration
    (const_spec
      name: (identifier) @name.definition.constant) @definition.constant))

; Calls: f(), obj.M(), pkg.F().
(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (selector_expression
    operand: (_) @qualifier.reference.call
    field: (field_identifier) @name.reference.call))

; Instantiations: Foo{}, pkg.Foo{}.
(composite_literal
  type: (type_identifier) @name.reference.new)

(composite_literal
  type: (generic_type type: (type_identifier) @name.reference.new))

(composite_literal
  type: (qualified_type
    package: (_) @qualifier.reference.new
    name: (type_identifier) @name.reference.new))

; Type uses anywhere.
(type_identifier) @name.reference.type

(qualified_type
  package: (_) @qualifier.reference.type
  name: (type_identifier) @name.reference.type)

; Reads of values: a package's exported names (capitalized: its consts and vars), bare or
; qualified (`inventory.MaxSKULength`). Calls and definitions win on the same node.
((identifier) @name.reference.read
  (#match? @name.reference.read "^[A-Z]"))

(selector_expression
  operand: (identifier) @qualifier.reference.read
  field: (field_identifier) @name.reference.read
  (#match? @name.reference.read "^[A-Z]"))

(const_spec name: (identifier) @name.written)
(var_spec name: (identifier) @name.written)
(short_var_declaration left: (expression_list (identifier) @name.written))
(keyed_element . (literal_element (identifier) @name.written))

; Imports.
(import_spec
  path: (interpreted_string_literal
    (interpreted_string_literal_content) @module.import))

(import_spec
  name: (package_identifier) @name.import)
