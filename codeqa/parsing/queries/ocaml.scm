; OCaml: definitions, references and imports in the shared capture vocabulary. A `let` of the
; file or of a module is a definition (a function when it takes parameters); local `let ... in`
; bindings are not. A module is a namespace.

(compilation_unit
  (value_definition
    (let_binding
      pattern: (value_name) @name.definition.function
      (parameter))) @definition.function)

(compilation_unit
  (value_definition
    (let_binding
      pattern: (value_name) @name.definition.function
      body: (fun_expression))) @definition.function)

(compilation_unit
  (value_definition
    (let_binding
      pattern: (value_name) @name.definition.constant)) @definition.constant)

(structure
  (value_definition
    (let_binding
      pattern: (value_name) @name.definition.function
      (parameter))) @definition.function)

(structure
  (value_definition
    (let_binding
      pattern: (value_name) @name.definition.function
      body: (fun_expression))) @definition.function)

(structure
  (value_definition
    (let_binding
      pattern: (value_name) @name.definition.constant)) @definition.constant)

(type_definition
  (type_binding
    name: (type_constructor) @name.definition.type)) @definition.type

(module_definition
  (module_binding
    (module_name) @name.definition.namespace)) @definition.namespace

(module_type_definition
  (module_type_name) @name.definition.interface) @definition.interface

(class_definition
  (class_binding
    (class_name) @name.definition.class)) @definition.class

(method_definition
  (method_name) @name.definition.method) @definition.method

; Calls: f x, M.f x.
(application_expression
  function: (value_path
    .
    (value_name) @name.reference.call))

(application_expression
  function: (value_path
    (module_path) @qualifier.reference.call
    (value_name) @name.reference.call))

; Type uses.
(type_constructor_path
  (type_constructor) @name.reference.type .)

; Imports: open M, include M.
(open_module
  (module_path) @module.import)
