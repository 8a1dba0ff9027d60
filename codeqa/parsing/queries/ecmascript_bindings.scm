; JavaScript and TypeScript: what a variable holds, for reading `x.m()` (see references.py):
; the class it is constructed from (`const x = new Cart()`, `this.cart = new Cart()`).

(variable_declarator
  name: (identifier) @variable.binding
  value: (new_expression
    constructor: [(identifier) (member_expression property: (property_identifier))] @type.binding))

(assignment_expression
  left: [(identifier) (member_expression)] @variable.binding
  right: (new_expression
    constructor: [(identifier) (member_expression property: (property_identifier))] @type.binding))
