; Rust: what a variable holds, for reading `x.m()` (see references.py): a parameter's or a
; `let`'s type, a struct literal, a constructor call `Cart::new()` / `Cart::default()`, a field.

(parameter
  pattern: (identifier) @variable.binding
  type: (_) @type.binding)

(let_declaration
  pattern: (identifier) @variable.binding
  type: (_) @type.binding)

(let_declaration
  pattern: (identifier) @variable.binding
  value: (struct_expression
    name: (_) @type.binding))

(let_declaration
  pattern: (identifier) @variable.binding
  value: (call_expression
    function: (scoped_identifier
      path: (_) @type.binding
      name: (identifier) @_constructor))
  (#match? @_constructor "^(new|default|with_.*|from_.*)$")
  (#match? @type.binding "(^|::)[A-Z][^:]*$"))

(let_declaration
  pattern: (identifier) @variable.binding
  value: (try_expression
    (call_expression
      function: (scoped_identifier
        path: (_) @type.binding
        name: (identifier) @_constructor)))
  (#match? @_constructor "^(new|default|with_.*|from_.*)$")
  (#match? @type.binding "(^|::)[A-Z][^:]*$"))

(field_declaration
  name: (field_identifier) @variable.binding
  type: (_) @type.binding)

; What a call holds is what the called function returns (`let td = tmpdir();`).
(let_declaration
  pattern: (identifier) @variable.binding
  value: (call_expression
    function: [(identifier) (field_expression field: (field_identifier))] @type.binding.call))

(function_item
  name: (identifier) @variable.binding.returns
  return_type: (_) @type.binding)

(function_signature_item
  name: (identifier) @variable.binding.returns
  return_type: (_) @type.binding)
