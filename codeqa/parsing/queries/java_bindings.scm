; Java: what a variable or field holds, for reading `x.m()` (see references.py): its declared
; type (`Cart x`, a parameter, a field), or the class a `var` is constructed from.

(local_variable_declaration
  type: (_) @type.binding
  declarator: (variable_declarator
    name: (identifier) @variable.binding)
  (#not-eq? @type.binding "var"))

(local_variable_declaration
  declarator: (variable_declarator
    name: (identifier) @variable.binding
    value: (object_creation_expression
      type: (_) @type.binding)))

(field_declaration
  type: (_) @type.binding
  declarator: (variable_declarator
    name: (identifier) @variable.binding))

(formal_parameter
  type: (_) @type.binding
  name: (identifier) @variable.binding)

(enhanced_for_statement
  type: (_) @type.binding
  name: (identifier) @variable.binding
  (#not-eq? @type.binding "var"))

; Base classes and interfaces: inside the class, `this` is also each of them.
(superclass
  (_) @type.base)

(super_interfaces
  (type_list
    (_) @type.base))

(extends_interfaces
  (type_list
    (_) @type.base))

; A method's result type, for `x.make().m()`.
(method_declaration
  type: (_) @type.binding
  name: (identifier) @variable.binding.returns)
