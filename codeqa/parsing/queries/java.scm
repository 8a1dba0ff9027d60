; Java: definitions, references and imports in the shared capture vocabulary.

(class_declaration
  name: (identifier) @name.definition.class) @definition.class

(interface_declaration
  name: (identifier) @name.definition.interface) @definition.interface

(annotation_type_declaration
  name: (identifier) @name.definition.interface) @definition.interface

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

(record_declaration
  name: (identifier) @name.definition.record) @definition.record

(method_declaration
  name: (identifier) @name.definition.method) @definition.method

(constructor_declaration
  name: (identifier) @name.definition.constructor) @definition.constructor

(compact_constructor_declaration
  name: (identifier) @name.definition.constructor) @definition.constructor

; Calls: m(), obj.m(), Type.m(), this.m(), Type::m.
(method_invocation
  name: (identifier) @name.reference.call)

(method_invocation
  object: (_) @qualifier.reference.call
  name: (identifier) @name.reference.call)

(method_reference
  .
  (_) @qualifier.reference.call
  (identifier) @name.reference.call .)

; Instantiations: new Foo(), new Foo<>(), new a.Foo().
(object_creation_expression
  type: (type_identifier) @name.reference.new)

(object_creation_expression
  type: (generic_type
    (type_identifier) @name.reference.new))

(object_creation_expression
  type: (scoped_type_identifier
    (_) @qualifier.reference.new
    (type_identifier) @name.reference.new .))

; Type uses anywhere: fields, parameters, locals, returns, extends/implements, generic args.
(type_identifier) @name.reference.type

; Imports.
(import_declaration
  (scoped_identifier) @module.import)

(import_declaration
  (scoped_identifier
    name: (identifier) @name.import))
