; JavaScript (and JSX) on top of ecmascript.scm: classes, class fields, JSX, superclasses.

(class_declaration
  name: (identifier) @name.definition.class) @definition.class

; Class fields holding functions: handle = () => {}
(field_definition
  property: (property_identifier) @name.definition.function
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; JSX components are called by React.
(jsx_opening_element
  name: (identifier) @name.reference.call
  (#match? @name.reference.call "^[A-Z]"))

(jsx_self_closing_element
  name: (identifier) @name.reference.call
  (#match? @name.reference.call "^[A-Z]"))

; Superclasses.
(class_heritage
  (identifier) @name.reference.type)

(class_heritage
  (member_expression
    object: (_) @qualifier.reference.type
    property: (property_identifier) @name.reference.type))
