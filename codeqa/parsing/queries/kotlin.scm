; Kotlin: definitions, references and imports in the shared capture vocabulary.
; Packages are not definitions. A companion object is not one either: its functions are
; the enclosing class's (`CouponValidator.forToday`). Earlier patterns win on the same node,
; so interfaces and enums come before plain classes.

(class_declaration
  "interface"
  name: (identifier) @name.definition.interface) @definition.interface

(class_declaration
  (modifiers
    (class_modifier) @_enum)
  name: (identifier) @name.definition.enum
  (#eq? @_enum "enum")) @definition.enum

(class_declaration
  name: (identifier) @name.definition.class) @definition.class

(object_declaration
  name: (identifier) @name.definition.class) @definition.class

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(secondary_constructor
  "constructor" @name.definition.constructor) @definition.constructor

(type_alias
  type: (identifier) @name.definition.type) @definition.type

; Constants: const val NAME = ... (top level or in an object).
(property_declaration
  (modifiers
    (property_modifier) @_const)
  (variable_declaration
    (identifier) @name.definition.constant)
  (#eq? @_const "const")) @definition.constant

; Calls: f(), Foo() (the resolver turns calls of classes into instantiations), obj.m(), Type.m().
(call_expression
  .
  (identifier) @name.reference.call)

(call_expression
  .
  (navigation_expression
    (_) @qualifier.reference.call
    (identifier) @name.reference.call .))

; Type uses: parameters, returns, properties, supertypes, generic arguments.
(user_type
  (identifier) @name.reference.type)

; Imports.
(import
  (qualified_identifier) @module.import)

(import
  (qualified_identifier
    (identifier) @name.import .))
