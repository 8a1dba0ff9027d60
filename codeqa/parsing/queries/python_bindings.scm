; Python: what a variable holds, for reading `x.m()` (see references.py). A call of a
; capitalised name constructs (`x = Cart()`, `x = shop.Cart()`); annotations say it outright.

(assignment
  left: (_) @variable.binding
  right: (call
    function: (identifier) @type.binding)
  (#match? @type.binding "^_*[A-Z]"))

(assignment
  left: (_) @variable.binding
  right: (call
    function: (attribute
      attribute: (identifier) @type.binding))
  (#match? @type.binding "^_*[A-Z]"))

(assignment
  left: (_) @variable.binding
  type: (type) @type.binding)

(typed_parameter
  (identifier) @variable.binding
  type: (type) @type.binding)

(typed_default_parameter
  name: (identifier) @variable.binding
  type: (type) @type.binding)

(with_statement
  (with_clause
    (with_item
      value: (as_pattern
        (call
          function: [(identifier) (attribute attribute: (identifier))] @type.binding)
        alias: (as_pattern_target (identifier) @variable.binding))))
  (#match? @type.binding "^_*[A-Z]|\\._*[A-Z][^.]*$"))

; Base classes: inside the class, `self` is also each base.
(class_definition
  superclasses: (argument_list
    (identifier) @type.base))

(class_definition
  superclasses: (argument_list
    (attribute
      attribute: (identifier) @type.base)))

; What a call of a lowercase name holds is what that function returns (`runner = make_runner()`,
; `runner = app.test_cli_runner()`), read from its return annotation.
(assignment
  left: (_) @variable.binding
  right: (call
    function: (identifier) @type.binding.call)
  (#not-match? @type.binding.call "^_*[A-Z]"))

(assignment
  left: (_) @variable.binding
  right: (call
    function: (attribute
      attribute: (identifier) @type.binding.call))
  (#not-match? @type.binding.call "^_*[A-Z]"))

(function_definition
  name: (identifier) @variable.binding.returns
  return_type: (type) @type.binding)
