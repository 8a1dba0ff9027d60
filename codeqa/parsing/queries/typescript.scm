; TypeScript and TSX on top of ecmascript.scm: classes, interfaces, type aliases, enums, type uses.

; Overload signatures (function f(a: string): void;), folded into the implementation that
; follows them, and ambient `declare function`s: declarations.
(function_signature
  name: (identifier) @name.definition.function) @definition.function @declaration

; Method overload signatures in a class body.
(class_body
  (method_signature
    name: (_) @name.definition.method) @definition.method @declaration)

(class_declaration
  name: (type_identifier) @name.definition.class) @definition.class

(abstract_class_declaration
  name: (type_identifier) @name.definition.class) @definition.class

(interface_declaration
  name: (type_identifier) @name.definition.interface) @definition.interface

(type_alias_declaration
  name: (type_identifier) @name.definition.type) @definition.type

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

; Abstract and interface methods: declarations, implemented elsewhere.
(abstract_method_signature
  name: (_) @name.definition.method) @definition.method @declaration

(interface_body
  (method_signature
    name: (_) @name.definition.method) @definition.method @declaration)

; Class fields holding functions: handle = () => {}
(public_field_definition
  name: (property_identifier) @name.definition.function
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; Type uses anywhere: annotations, returns, implements/extends, generic args.
(type_identifier) @name.reference.type

(nested_type_identifier
  module: (_) @qualifier.reference.type
  name: (type_identifier) @name.reference.type)

(class_heritage
  (extends_clause
    value: (identifier) @name.reference.type))
