; TypeScript: a parameter's, variable's or field's declared type, for reading `x.m()`.

(required_parameter
  pattern: (identifier) @variable.binding
  type: (type_annotation (_) @type.binding))

(optional_parameter
  pattern: (identifier) @variable.binding
  type: (type_annotation (_) @type.binding))

(variable_declarator
  name: (identifier) @variable.binding
  type: (type_annotation (_) @type.binding))

(public_field_definition
  name: (property_identifier) @variable.binding
  type: (type_annotation (_) @type.binding))

(class_heritage
  (extends_clause
    value: (identifier) @type.base))

(class_heritage
  (implements_clause
    (type_identifier) @type.base))
