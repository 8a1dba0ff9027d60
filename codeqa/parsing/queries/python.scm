; Python: definitions, references and imports in the shared capture vocabulary.

(class_definition
  name: (identifier) @name.definition.class) @definition.class

(function_definition
  name: (identifier) @name.definition.function) @definition.function

; Declarations: `@overload` / `@typing.overload` stubs (folded into their implementation) and
; `@abstractmethod`s (implemented by subclasses, so definitions of their own).
(decorated_definition
  (decorator
    [(identifier) @_decorator
     (attribute attribute: (identifier) @_decorator)])
  definition: (function_definition) @declaration
  (#any-of? @_decorator "overload" "abstractmethod"))

; Module-level constants by convention (UPPER_CASE, also annotated) and `__all__`.
(module
  (expression_statement
    (assignment
      left: (identifier) @name.definition.constant)) @definition.constant
  (#match? @name.definition.constant "^(_*[A-Z][A-Z0-9_]*|__all__)$"))

; Calls: f(), obj.m(), Foo() (the resolver turns calls of classes into instantiations).
(call
  function: (identifier) @name.reference.call)

(call
  function: (attribute
    object: (_) @qualifier.reference.call
    attribute: (identifier) @name.reference.call))

; A bare decorator is applied like a call.
(decorator
  (identifier) @name.reference.call)

(decorator
  (attribute
    object: (_) @qualifier.reference.call
    attribute: (identifier) @name.reference.call))

; Type uses: annotations, return types, base classes.
(type
  (identifier) @name.reference.type)

(type
  (string
    (string_content) @name.reference.type))

(type
  (attribute
    object: (_) @qualifier.reference.type
    attribute: (identifier) @name.reference.type))

(generic_type
  (identifier) @name.reference.type)

(class_definition
  superclasses: (argument_list
    (identifier) @name.reference.type))

(class_definition
  superclasses: (argument_list
    (attribute
      object: (_) @qualifier.reference.type
      attribute: (identifier) @name.reference.type)))

; Reads of values: a name written as the module constants are (UPPER_CASE), bare or as an
; attribute (`settings.TIMEOUT`). Calls, type uses and definitions win on the same node.
((identifier) @name.reference.read
  (#match? @name.reference.read "^_*[A-Z][A-Z0-9_]*$"))

(attribute
  object: (_) @qualifier.reference.read
  attribute: (identifier) @name.reference.read
  (#match? @name.reference.read "^_*[A-Z][A-Z0-9_]*$"))

(assignment left: (identifier) @name.written)
(keyword_argument name: (identifier) @name.written)

; Imports.
(import_statement
  name: (dotted_name) @module.import)

(import_statement
  name: (aliased_import
    name: (dotted_name) @module.import))

(import_from_statement
  module_name: (_) @module.import)

(import_from_statement
  name: (dotted_name) @name.import)

(import_from_statement
  name: (aliased_import
    name: (dotted_name) @name.import))
