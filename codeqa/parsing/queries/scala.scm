; Scala: definitions, references and imports in the shared capture vocabulary.
; Packages are not definitions; an object is a class-like (its methods are `Obj.m`).

(class_definition
  name: (identifier) @name.definition.class) @definition.class

(object_definition
  name: (identifier) @name.definition.class) @definition.class

(trait_definition
  name: (identifier) @name.definition.trait) @definition.trait

(enum_definition
  name: (identifier) @name.definition.enum) @definition.enum

(function_definition
  name: (identifier) @name.definition.function) @definition.function

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(type_definition
  name: (type_identifier) @name.definition.type) @definition.type

; Calls: f(), Foo(...) (a case class's apply: an instantiation, by the resolver), obj.m().
(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (field_expression
    value: (_) @qualifier.reference.call
    field: (identifier) @name.reference.call))

(call_expression
  function: (generic_function
    function: (identifier) @name.reference.call))

; Instantiations: new Foo(...), new Foo[T](...).
(instance_expression
  (type_identifier) @name.reference.new)

(instance_expression
  (generic_type
    type: (type_identifier) @name.reference.new))

; Type uses anywhere.
(type_identifier) @name.reference.type

; Imports.
(import_declaration) @module.import
