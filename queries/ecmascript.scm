; Shared by JavaScript and TypeScript (both grammars name these nodes alike): functions,
; methods, calls, instantiations and imports in the shared capture vocabulary.

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(generator_function_declaration
  name: (identifier) @name.definition.function) @definition.function

(method_definition
  name: (_) @name.definition.method) @definition.method

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
