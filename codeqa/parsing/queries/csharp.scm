; C#: definitions, references and imports in the shared capture vocabulary.
; Namespaces are not definitions: qualified names leave them out (as in Java and C++).

(class_declaration
  name: (identifier) @name.definition.class) @definition.class

(struct_declaration
  name: (identifier) @name.definition.struct) @definition.struct

(record_declaration
  name: (identifier) @name.definition.record) @definition.record

(interface_declaration
  name: (identifier) @name.definition.interface) @definition.interface

(enum_declaration
  name: (identifier) @name.definition.enum) @definition.enum

(method_declaration
  name: (identifier) @name.definition.method) @definition.method

(local_function_statement
  name: (identifier) @name.definition.function) @definition.function

(constructor_declaration
  name: (identifier) @name.definition.constructor) @definition.constructor

(delegate_declaration
  name: (identifier) @name.definition.type) @definition.type

; Constants of a class: const fields.
(field_declaration
  (modifier) @_const
  (variable_declaration
    (variable_declarator
      name: (identifier) @name.definition.constant))
  (#eq? @_const "const")) @definition.constant

; Calls: M(), obj.M(), Type.M(), this.M(), M<T>().
(invocation_expression
  function: (identifier) @name.reference.call)

(invocation_expression
  function: (generic_name
    (identifier) @name.reference.call))

(invocation_expression
  function: (member_access_expression
    expression: (_) @qualifier.reference.call
    name: [(identifier) (generic_name (identifier))] @name.reference.call))

; Instantiations: new Foo(), new Foo<T>(), new Billing.Foo().
(object_creation_expression
  type: (identifier) @name.reference.new)

(object_creation_expression
  type: (generic_name
    (identifier) @name.reference.new))

(object_creation_expression
  type: (qualified_name
    qualifier: (_) @qualifier.reference.new
    name: (identifier) @name.reference.new))

; Type uses: parameters, fields, locals, returns, properties, base types, generic arguments.
(parameter
  type: (identifier) @name.reference.type)

(variable_declaration
  type: (identifier) @name.reference.type)

(method_declaration
  returns: (identifier) @name.reference.type)

(property_declaration
  type: (identifier) @name.reference.type)

(base_list
  (identifier) @name.reference.type)

(base_list
  (generic_name
    (identifier) @name.reference.type))

(type_argument_list
  (identifier) @name.reference.type)

(generic_name
  (identifier) @name.reference.type
  (type_argument_list))

; Imports.
(using_directive
  [(identifier) (qualified_name)] @module.import)
