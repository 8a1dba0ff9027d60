; Swift: definitions, references and imports in the shared capture vocabulary.
; One node type holds classes, structs, enums, actors and extensions; its keyword tells them
; apart. An extension is named after the type it extends (like a Rust impl).

(class_declaration
  declaration_kind: "extension"
  name: (user_type
    (type_identifier) @name.definition.impl .)) @definition.impl

(class_declaration
  declaration_kind: "struct"
  name: (type_identifier) @name.definition.struct) @definition.struct

(class_declaration
  declaration_kind: "enum"
  name: (type_identifier) @name.definition.enum) @definition.enum

(class_declaration
  name: (type_identifier) @name.definition.class) @definition.class

(protocol_declaration
  name: (type_identifier) @name.definition.interface) @definition.interface

(function_declaration
  name: (simple_identifier) @name.definition.function) @definition.function

(protocol_function_declaration
  name: (simple_identifier) @name.definition.method) @definition.method

(init_declaration
  "init" @name.definition.constructor) @definition.constructor

(typealias_declaration
  name: (type_identifier) @name.definition.type) @definition.type

; Calls: f(), Foo(...) (instantiations, by the resolver), obj.m(), Type.m().
(call_expression
  .
  (simple_identifier) @name.reference.call)

(call_expression
  .
  (navigation_expression
    target: (_) @qualifier.reference.call
    suffix: (navigation_suffix
      suffix: (simple_identifier) @name.reference.call)))

; Type uses: annotations, returns, conformances, generic arguments.
(user_type
  (type_identifier) @name.reference.type)

; Imports.
(import_declaration
  (identifier) @module.import)
