; JavaScript on top of ecmascript.scm (and jsx.scm): classes, class fields, superclasses.

(class_declaration
  name: (identifier) @name.definition.class) @definition.class

; Class fields holding functions: handle = () => {}
(field_definition
  property: (property_identifier) @name.definition.function
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; Superclasses.
(class_heritage
  (identifier) @name.reference.type)

(class_heritage
  (member_expression
    object: (_) @qualifier.reference.type
    property: (property_identifier) @name.reference.type))
