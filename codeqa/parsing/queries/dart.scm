; Dart: definitions, references and imports in the shared capture vocabulary.
; The grammar puts a function's body beside its signature, not inside it: the language
; table's suffix types join the two.

(class_definition
  name: (identifier) @name.definition.class) @definition.class

(mixin_declaration
  (identifier) @name.definition.trait) @definition.trait

(extension_declaration
  name: (identifier) @name.definition.impl) @definition.impl

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

(method_signature
  [(function_signature name: (identifier) @name.definition.method)
   (getter_signature name: (identifier) @name.definition.method)
   (setter_signature name: (identifier) @name.definition.method)]) @definition.method

(method_signature
  [(constructor_signature name: (identifier) @name.definition.constructor)
   (factory_constructor_signature (identifier) @name.definition.constructor .)]) @definition.constructor

(declaration
  [(constructor_signature name: (identifier) @name.definition.constructor)
   (factory_constructor_signature (identifier) @name.definition.constructor .)]) @definition.constructor

(class_body
  (declaration
    (function_signature
      name: (identifier) @name.definition.method)) @definition.method)

(program
  (function_signature
    name: (identifier) @name.definition.function) @definition.function)

(type_alias
  (type_identifier) @name.definition.type) @definition.type

; Calls: f(), Foo() (an instantiation, by the resolver), obj.m().
((identifier) @name.reference.call
 .
 (selector
   (argument_part)))

((identifier) @qualifier.reference.call
 .
 (selector
   (unconditional_assignable_selector
     (identifier) @name.reference.call))
 .
 (selector
   (argument_part)))

((selector
   (unconditional_assignable_selector
     (identifier) @name.reference.call))
 .
 (selector
   (argument_part)))

; Instantiations: new Foo(), const Foo().
(new_expression
  (type_identifier) @name.reference.new)

(const_object_expression
  (type_identifier) @name.reference.new)

; Type uses anywhere.
(type_identifier) @name.reference.type

; Imports.
(library_import
  (import_specification
    (configurable_uri
      (uri
        (string_literal) @module.import))))
