; Haskell: definitions, references and imports in the shared capture vocabulary.
; A function's type signature is part of it (a prefix, see the language table); a type class
; is an interface whose signatures are its methods.

(data_type
  name: (name) @name.definition.type) @definition.type

(newtype
  name: (name) @name.definition.type) @definition.type

(type_synonym
  name: (name) @name.definition.type) @definition.type

(class
  name: (name) @name.definition.interface) @definition.interface

(class_declarations
  (signature
    name: (variable) @name.definition.method) @definition.method)

(instance
  name: (name) @name.definition.impl) @definition.impl

(declarations
  (function
    name: (variable) @name.definition.function) @definition.function)

(declarations
  (bind
    name: (variable) @name.definition.function) @definition.function)

(instance_declarations
  (function
    name: (variable) @name.definition.method) @definition.method)

; Calls: f x (the function of an application), qualified M.f x.
(apply
  function: (variable) @name.reference.call)

(apply
  function: (qualified
    module: (_) @qualifier.reference.call
    id: (variable) @name.reference.call))

; Constructors applied: Entry a b.
(apply
  function: (constructor) @name.reference.new)

; Type uses: signatures, fields, instance heads.
(signature
  type: (_
    (name) @name.reference.type))

(field
  type: (name) @name.reference.type)

; Imports.
(import
  module: (module) @module.import)

(import
  names: (import_list
    (import_name
      [(variable) (name)] @name.import)))
