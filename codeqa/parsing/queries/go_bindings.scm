; Go: what a variable holds, for reading `x.M()` (see references.py): a receiver or parameter's
; type (`c *Context`), a `var` with a type, a composite literal (`x := &Engine{}`), a field.

(parameter_declaration
  name: (identifier) @variable.binding
  type: (_) @type.binding)

(var_spec
  name: (identifier) @variable.binding
  type: (_) @type.binding)

(short_var_declaration
  left: (expression_list
    .
    (identifier) @variable.binding)
  right: (expression_list
    .
    [(composite_literal type: (_) @type.binding)
     (unary_expression operand: (composite_literal type: (_) @type.binding))]))

(field_declaration
  name: (field_identifier) @variable.binding
  type: (_) @type.binding)

; An embedded field: its methods are promoted, as a base's are.
(field_declaration
  !name
  type: (_) @type.base)

(var_spec
  name: (identifier) @variable.binding
  value: (expression_list
    .
    [(composite_literal type: (_) @type.binding)
     (unary_expression operand: (composite_literal type: (_) @type.binding))]))

; What a call holds is what the called function returns (`router := New()`).
(short_var_declaration
  left: (expression_list
    .
    (identifier) @variable.binding)
  right: (expression_list
    .
    (call_expression
      function: [(identifier) (selector_expression field: (field_identifier))] @type.binding.call)))

(function_declaration
  name: (identifier) @variable.binding.returns
  result: [(type_identifier) (pointer_type) (qualified_type) (generic_type)] @type.binding)

(method_declaration
  name: (field_identifier) @variable.binding.returns
  result: [(type_identifier) (pointer_type) (qualified_type) (generic_type)] @type.binding)
