; TypeScript and TSX: definitions, references and imports in the shared capture vocabulary.

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(generator_function_declaration
  name: (identifier) @name.definition.function) @definition.function

; Overload signatures: function f(a: string): void;
(function_signature
  name: (identifier) @name.definition.function) @definition.function

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

(method_definition
  name: (_) @name.definition.method) @definition.method

(abstract_method_signature
  name: (_) @name.definition.method) @definition.method

(interface_body
  (method_signature
    name: (_) @name.definition.method) @definition.method)

; Class fields holding functions: handle = () => {}
(public_field_definition
  name: (property_identifier) @name.definition.function
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; const f = () => {}, let g = function () {}
(lexical_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(variable_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

; Calls: f(), obj.m(), this.m(), Type.m().
(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (member_expression
    object: (_) @qualifier.reference.call
    property: (property_identifier) @name.reference.call))

; Instantiations: new Foo(), new ns.Foo().
(new_expression
  constructor: (identifier) @name.reference.new)

(new_expression
  constructor: (member_expression
    object: (_) @qualifier.reference.new
    property: (property_identifier) @name.reference.new))

; Type uses anywhere: annotations, returns, implements/extends, generic args.
(type_identifier) @name.reference.type

(nested_type_identifier
  module: (_) @qualifier.reference.type
  name: (type_identifier) @name.reference.type)

(class_heritage
  (extends_clause
    value: (identifier) @name.reference.type))

; Imports: import ... from './a', export ... from './a', require('./a').
(import_statement
  source: (string
    (string_fragment) @module.import))

(export_statement
  source: (string
    (string_fragment) @module.import))

(call_expression
  function: (identifier) @_require
  arguments: (arguments
    .
    (string
      (string_fragment) @module.import))
  (#eq? @_require "require"))

(import_clause
  (identifier) @name.import)

(import_specifier
  name: (identifier) @name.import)
